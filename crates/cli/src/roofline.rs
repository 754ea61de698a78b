//! `tokscope roofline`: the calculator of the roofline panel, on the command line.

use crate::CliResult;
use crate::args::RooflineArgs;
use tokscope_core::human::{bytes, parse_count, si};
use tokscope_core::presets::{self, DEVICES, MODELS};
use tokscope_core::roofline::{Estimate, Inputs, KvCache};

#[derive(serde::Serialize)]
struct Report {
    #[serde(flatten)]
    estimate: Estimate,
    batch: u32,
    bandwidth_gb_s: f64,
    peak_tflops: Option<f64>,
    mbu: Option<f64>,
}

fn list() {
    println!("devices (peak, as quoted by their makers; not measured):");
    for d in DEVICES {
        let tflops = d.peak_tflops.map(|t| format!(", {t} TFLOP/s")).unwrap_or_default();
        println!(
            "  {:<16} {:<30} {} GB/s{tflops}   [{}]",
            d.id, d.name, d.bandwidth_gb_s, d.source
        );
    }
    println!("models:");
    for m in MODELS {
        println!(
            "  {:<16} {:<30} {} active, {} bits   [{}]",
            m.id,
            m.name,
            si(m.active_params, ""),
            m.bits_per_weight,
            m.source
        );
    }
}

/// The inputs: presets first, then every explicit flag over them.
fn inputs(a: &RooflineArgs) -> Result<Inputs, String> {
    let mut i = Inputs {
        batch: a.batch,
        overhead_s: a.overhead_ms / 1e3,
        ..Default::default()
    };
    let mut kv_shape = None;
    let mut have = (false, false, false); // params, bits, bandwidth
    if let Some(id) = &a.model {
        let m = presets::model(id).ok_or_else(|| format!("no model preset {id:?} (see --list)"))?;
        (i.active_params, i.bits_per_weight, kv_shape) = (m.active_params, m.bits_per_weight, m.kv_shape);
        (have.0, have.1) = (true, true);
    }
    if let Some(id) = &a.device {
        let d = presets::device(id).ok_or_else(|| format!("no device preset {id:?} (see --list)"))?;
        (i.bandwidth_gb_s, i.peak_tflops) = (d.bandwidth_gb_s, d.peak_tflops);
        have.2 = true;
    }
    if let Some(p) = &a.params {
        i.active_params = parse_count(p).map_err(|e| format!("--params: {e}"))?;
        have.0 = true;
    }
    if let Some(b) = a.bits {
        (i.bits_per_weight, have.1) = (b, true);
    }
    if let Some(g) = a.bandwidth_gbs {
        (i.bandwidth_gb_s, have.2) = (g, true);
    }
    if a.tflops.is_some() {
        i.peak_tflops = a.tflops;
    }
    let missing: Vec<&str> = [(have.0, "--params"), (have.1, "--bits"), (have.2, "--bandwidth-gbs")]
        .iter()
        .filter(|(h, _)| !h)
        .map(|(_, f)| *f)
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing {} (or a --model/--device preset)", missing.join(", ")));
    }
    let shape = (a.layers, a.kv_heads, a.head_dim);
    let shape = match (shape, kv_shape) {
        ((Some(l), Some(h), Some(d)), _) => Some((l, h, d)),
        ((None, None, None), preset) => preset,
        _ => return Err("the KV cache needs all of --layers, --kv-heads and --head-dim".into()),
    };
    i.kv = match (shape, a.context) {
        (Some((layers, kv_heads, head_dim)), Some(context)) => Some(KvCache {
            layers,
            kv_heads,
            head_dim,
            context,
            bits: a.kv_bits,
        }),
        (Some(_), None) if a.layers.is_some() => return Err("--layers needs --context (tokens in the cache)".into()),
        (None, Some(_)) => {
            return Err("--context needs --layers, --kv-heads and --head-dim (or a --model preset)".into());
        }
        _ => None,
    };
    Ok(i)
}

pub fn run(a: RooflineArgs) -> CliResult {
    if a.list {
        list();
        return Ok(());
    }
    let i = inputs(&a)?;
    let e = i.estimate().map_err(|e| e.to_string())?;
    let mbu = match a.measured_tok_s {
        Some(t) if !(t.is_finite() && t > 0.0) => {
            return Err(format!("--measured-tok-s must be more than zero, got {t}"));
        }
        Some(t) => e.mbu(t, i.bandwidth_gb_s),
        None => None,
    };
    if a.json {
        let r = Report {
            estimate: e,
            batch: i.batch,
            bandwidth_gb_s: i.bandwidth_gb_s,
            peak_tflops: i.peak_tflops,
            mbu,
        };
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!(
        "bytes per step     {} (weights {}, KV cache {})",
        bytes(e.bytes_per_step),
        bytes(e.weight_bytes),
        bytes(e.kv_bytes)
    );
    println!("FLOPs per step     {}", si(e.flops_per_step, "FLOP"));
    let ms = |s: f64| format!("{:.3} ms", s * 1e3);
    let compute = if i.peak_tflops.is_some() {
        ms(e.compute_s)
    } else {
        "no peak given".into()
    };
    println!(
        "step time          {} (memory {}, compute {compute})",
        ms(e.step_s),
        ms(e.memory_s)
    );
    println!("per-user rate      {:.1} tok/s", e.per_user_tok_s);
    println!("aggregate rate     {:.1} tok/s (batch {})", e.aggregate_tok_s, i.batch);
    let ridge = e
        .ridge_point
        .map(|r| format!("; ridge point {r:.1} FLOP/byte"))
        .unwrap_or_default();
    println!("intensity          {:.2} FLOP/byte{ridge}", e.arithmetic_intensity);
    println!("bound              {}", e.bound.as_str());
    if let (Some(m), Some(t)) = (mbu, a.measured_tok_s) {
        println!("MBU                {:.1} % ({t} tok/s measured)", 100.0 * m);
    }
    Ok(())
}

//! `tokscope bench --sweep precision`: the same weights re-encoded at every precision of the
//! dial, each decoded on the same device, beside the ceiling bandwidth ÷ bytes per token that
//! the probe predicts. `--sweep batch` needs batched decode, which the engines do not have yet.

use crate::CliResult;
use crate::args::{Backend, BenchArgs, Sweep};
use crate::bench::{Measured, bench_context, bench_prompt, measure};
use crate::engine;
use crate::model_file::{FileBytes, open};
use serde::Serialize;
use std::sync::Arc;
use tokscope_core::gguf::Gguf;
use tokscope_core::model::Model;
use tokscope_core::requant::{DIAL, requantize};
use tokscope_core::stats::median;
use tokscope_core::tokenizer::Tokenizer;
use tokscope_gpu::GpuContext;

#[derive(Serialize)]
struct Row {
    #[serde(rename = "type")]
    ty: &'static str,
    bits_per_weight: f64,
    bytes_per_token: f64,
    decode_tok_s: f64,
    prefill_tok_s: f64,
    effective_gb_s: f64,
    /// probe bandwidth ÷ bytes per token (GPU only).
    predicted_tok_s: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    sweep: &'static str,
    backend: &'static str,
    adapter: String,
    probe_gb_s: Option<f64>,
    tokens: usize,
    runs: usize,
    rows: Vec<Row>,
}

pub fn run(a: &BenchArgs, sweep: Sweep) -> CliResult {
    if sweep == Sweep::Batch {
        return Err("--sweep batch: batched decode is not implemented yet (issue #3); only batch 1 is measured".into());
    }
    let gguf = open(&a.model)?;
    let shown = a.model.display();
    let tokenizer = Tokenizer::from_gguf(&gguf).map_err(|e| format!("{shown}: {e}"))?;
    let (backend, adapter, probe_gb_s) = match a.backend {
        Backend::Cpu => (
            "cpu",
            format!("CPU, {} threads", tokscope_core::cpu::parallel::threads()),
            None,
        ),
        Backend::Gpu => {
            let ctx = GpuContext::new_blocking().map_err(|e| e.to_string())?;
            let probe = tokscope_gpu::probe::run(&ctx, 5).map_err(|e| e.to_string())?;
            let s = ctx.summary();
            (
                "gpu",
                format!("{} ({}, {})", s.name, s.backend, s.device_type),
                Some(probe.read_gb_s),
            )
        }
    };
    let mut rows = Vec::new();
    for ty in DIAL {
        let bytes = requantize(&gguf, ty, |_, _| {}).map_err(|e| format!("{shown}: {e}"))?;
        let g = Gguf::parse(FileBytes::Owned(bytes)).map_err(|e| format!("{shown} at {ty}: {e}"))?;
        let model = Arc::new(Model::from_gguf(g).map_err(|e| format!("{shown} at {ty}: {e}"))?);
        let prompt = bench_prompt(&tokenizer, a.prompt_tokens)?;
        let context = bench_context(&model, &prompt, a.tokens)?;
        let mut engine = engine::new(a.backend, model.clone(), context).map_err(|e| format!("at {ty}: {e}"))?;
        let Measured {
            decode_runs,
            prefill_runs,
            bytes_per_token,
        } = measure(&mut engine, &model, &prompt, a.tokens, a.runs)?;
        let decode_tok_s = median(&decode_runs);
        rows.push(Row {
            ty: ty.name(),
            bits_per_weight: ty.bits_per_weight(),
            bytes_per_token,
            decode_tok_s,
            prefill_tok_s: median(&prefill_runs),
            effective_gb_s: decode_tok_s * bytes_per_token / 1e9,
            predicted_tok_s: probe_gb_s.map(|p| p * 1e9 / bytes_per_token),
        });
        if !a.json {
            eprintln!("measured {ty}");
        }
    }
    let report = Report {
        sweep: "precision",
        backend,
        adapter,
        probe_gb_s,
        tokens: a.tokens,
        runs: a.runs,
        rows,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!(
        "precision sweep — {} — {}{}",
        report.backend,
        report.adapter,
        probe_gb_s.map(|p| format!(", probe {p:.2} GB/s")).unwrap_or_default()
    );
    println!(
        "type   bits/weight  MB/token  decode tok/s  prefill tok/s  effective GB/s  ceiling tok/s  decode ÷ ceiling"
    );
    for r in &report.rows {
        let ceiling = r.predicted_tok_s.map_or("–".into(), |p| format!("{p:.1}"));
        let ratio = r
            .predicted_tok_s
            .map_or("–".into(), |p| format!("{:.2}", r.decode_tok_s / p));
        println!(
            "{:<6} {:>11.2} {:>9.1} {:>13.1} {:>14.1} {:>15.2} {:>14} {:>17}",
            r.ty,
            r.bits_per_weight,
            r.bytes_per_token / 1e6,
            r.decode_tok_s,
            r.prefill_tok_s,
            r.effective_gb_s,
            ceiling,
            ratio
        );
    }
    Ok(())
}

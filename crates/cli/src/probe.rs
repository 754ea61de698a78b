//! `tokscope probe`: this device's measured roofline.

use crate::CliResult;
use crate::args::ProbeArgs;
use serde::Serialize;
use tokscope_gpu::{AdapterSummary, GpuContext};

#[derive(Serialize)]
struct Report {
    adapter: AdapterSummary,
    #[serde(flatten)]
    probe: tokscope_gpu::probe::ProbeResult,
}

pub fn run(a: ProbeArgs) -> CliResult {
    let tick_s = match a.tick_ms {
        Some(t) if !(t.is_finite() && t > 0.0 && t <= 10_000.0) => {
            return Err(format!("--tick-ms must be a time in ms between 0 and 10000, got {t}"));
        }
        t => t.map(|t| t * 1e-3),
    };
    let ctx = GpuContext::new_blocking().map_err(|e| e.to_string())?;
    let probe = tokscope_gpu::probe::run_with(
        &ctx,
        &tokscope_gpu::probe::Native {
            runs: a.runs,
            tick_s,
            at_least_s: 0.0,
        },
    )
    .map_err(|e| e.to_string())?;
    let r = Report {
        adapter: ctx.summary(),
        probe,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let (ad, p) = (&r.adapter, &r.probe);
    println!(
        "adapter:        {} ({}, {}, {})",
        ad.name, ad.backend, ad.device_type, ad.driver
    );
    println!(
        "limits:         max buffer {:.0} MB, max storage binding {:.0} MB; timestamp-query {}, subgroups {}, shader-f16 {}",
        ad.max_buffer_size as f64 / 1e6,
        ad.max_storage_buffer_binding_size as f64 / 1e6,
        ad.timestamp_query,
        ad.subgroups,
        ad.shader_f16
    );
    let gpu = |f: Option<f64>, unit: &str| f.map_or(String::new(), |v| format!("; GPU timestamps {v:.2} {unit}"));
    println!(
        "read bandwidth: {:.2} GB/s (median of {} runs: {} streaming dispatches of {:.0} MB took {:.0} ms more than one){}",
        p.read_gb_s,
        p.read_gb_s_runs.len(),
        p.stream_dispatches,
        p.bytes as f64 / 1e6,
        p.stream_extra_ms,
        gpu(p.gpu_clock.map(|g| g.read_gb_s), "GB/s")
    );
    println!(
        "per dispatch:   {:.2} µs ({} empty dispatches in one pass took {:.0} ms more than one){}",
        p.dispatch_us,
        p.empty_dispatches,
        p.empty_extra_ms,
        gpu(p.gpu_clock.map(|g| g.dispatch_us), "µs")
    );
    println!(
        "completion:     {} (submit one empty dispatch, wait, read back 4 bytes)",
        p.latency.describe()
    );
    Ok(())
}

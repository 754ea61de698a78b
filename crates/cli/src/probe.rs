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
    let ctx = GpuContext::new_blocking().map_err(|e| e.to_string())?;
    let probe = tokscope_gpu::probe::run(&ctx, a.runs).map_err(|e| e.to_string())?;
    let r = Report {
        adapter: ctx.summary(),
        probe,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let ad = &r.adapter;
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
    println!(
        "read bandwidth: {:.2} GB/s (median of {} runs over {:.0} MB)",
        r.probe.read_gb_s,
        r.probe.read_gb_s_runs.len(),
        r.probe.bytes as f64 / 1e6
    );
    println!(
        "per dispatch:   {:.1} µs (inside one compute pass)",
        r.probe.dispatch_us
    );
    println!(
        "round trip:     {:.3} ms (submit, wait, read back 4 bytes)",
        r.probe.round_trip_ms
    );
    Ok(())
}

#![cfg(not(target_arch = "wasm32"))]
//! The probe runs and reports sane figures on whatever adapter is there.

mod common;

#[test]
fn probe_reports_bandwidth_dispatch_cost_and_round_trip() {
    let Some(ctx) = common::gpu() else { return };
    let r = tokscope_gpu::probe::run(&ctx, 5).unwrap();
    println!("{r:?}");
    assert!(r.bytes >= 16 << 20, "{}", r.bytes);
    assert_eq!(r.read_gb_s_runs.len(), 5);
    assert!(r.read_gb_s > 0.05 && r.read_gb_s < 100_000.0, "{}", r.read_gb_s);
    assert!(r.dispatch_us.is_finite() && r.round_trip_ms > 0.0);
}

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

/// A tensor too large for one binding is refused with the tensor's name and the limit it
/// breaks (what the page shows before falling back to the CPU engine).
#[test]
fn a_tensor_over_the_binding_limit_is_named() {
    let Some(ctx) = common::gpu() else { return };
    let limit = ctx.limits.max_storage_buffer_binding_size;
    assert!(ctx.check_binding("token_embd.weight", limit).is_ok());
    let e = ctx
        .check_binding("token_embd.weight", limit + 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"token_embd.weight\"")
            && e.contains(&limit.to_string())
            && e.contains("maxStorageBufferBindingSize"),
        "{e}"
    );
}

#![cfg(not(target_arch = "wasm32"))]
//! The probe runs and reports sane figures on whatever adapter is there.

mod common;

/// One probe at a time: two at once on a CPU adapter halve each other's figures.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn probe_reports_bandwidth_dispatch_cost_and_latency() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(ctx) = common::gpu() else { return };
    let r = tokscope_gpu::probe::run(&ctx, 5).unwrap();
    println!("{r:?}");
    assert!(r.bytes >= 16 << 20, "{}", r.bytes);
    assert_eq!(r.read_gb_s_runs.len(), 5);
    assert!(r.read_gb_s > 0.05 && r.read_gb_s < 100_000.0, "{}", r.read_gb_s);
    // Each figure from a difference of at least 100 ms.
    assert!(r.stream_extra_ms >= 100.0 && r.stream_dispatches >= 2, "{r:?}");
    assert!(r.empty_extra_ms >= 100.0 || r.empty_dispatches == 1 << 20, "{r:?}");
    assert!(r.dispatch_us.is_finite() && r.dispatch_us >= 0.0);
    let l = r.latency;
    assert!(
        0.0 < l.min_ms && l.min_ms <= l.median_ms && l.median_ms <= l.max_ms,
        "{l:?}"
    );
    assert_eq!(l.tick_ms, None, "a native completion is no timer's tick: {l:?}");
    if ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        let g = r.gpu_clock.expect("timestamps on the adapter give GPU-clock figures");
        // The same passes on two clocks: the host's wait is outside the GPU's.
        assert!((g.read_gb_s / r.read_gb_s - 1.0).abs() < 0.1, "{g:?} vs {r:?}");
    }
}

/// Completions learned only on a 100 ms timer (Firefox's WebGPU) leave the figures where they
/// were: the probe grows its long submits until the difference is 20 ticks, and names the tick.
/// Lavapipe's own speed moves with the shared machine's load, so the undelayed probe runs before
/// and after the delayed one, and the delayed figures must fall within 25 % of their runs.
#[test]
fn a_100_ms_completion_tick_moves_no_figure_by_a_quarter() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(ctx) = common::gpu() else { return };
    let before = tokscope_gpu::probe::run(&ctx, 5).unwrap();
    let ticked = tokscope_gpu::probe::run_ticked(&ctx, 3, Some(0.1)).unwrap();
    let after = tokscope_gpu::probe::run(&ctx, 5).unwrap();
    let line = |what: &str, r: &tokscope_gpu::probe::ProbeResult| {
        println!(
            "{what}: {:.2} GB/s ({} streams, +{:.0} ms), {:.1} µs a dispatch ({} dispatches, +{:.0} ms), latency {}",
            r.read_gb_s,
            r.stream_dispatches,
            r.stream_extra_ms,
            r.dispatch_us,
            r.empty_dispatches,
            r.empty_extra_ms,
            r.latency.describe()
        )
    };
    line("undelayed", &before);
    line("100 ms tick", &ticked);
    line("undelayed", &after);
    let tick = ticked.latency.tick_ms.expect("the tick is recognised");
    assert!((100.0..110.0).contains(&tick), "{tick}");
    assert!(ticked.stream_extra_ms >= 1900.0, "20 ticks of difference: {ticked:?}");
    // The same passes on the GPU's clock: the tick is outside it, so the wall clock's figures
    // must match it as closely as the undelayed probe's do.
    if let Some(g) = ticked.gpu_clock {
        assert!((ticked.read_gb_s / g.read_gb_s - 1.0).abs() < 0.1, "{ticked:?}");
        assert!((ticked.dispatch_us / g.dispatch_us - 1.0).abs() < 0.1, "{ticked:?}");
    }
    // Against the undelayed probes: within 25 % of the range of their ten runs (lavapipe's
    // dispatches wake its thread pool, whose cost moves by a third with the machine's load).
    let within = |x: f64, runs: Vec<f64>| {
        let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = runs.iter().copied().fold(0.0, f64::max);
        0.75 * lo <= x && x <= 1.25 * hi
    };
    let runs =
        |f: fn(&tokscope_gpu::probe::ProbeResult) -> &Vec<f64>| [f(&before).as_slice(), f(&after).as_slice()].concat();
    assert!(
        within(ticked.read_gb_s, runs(|r| &r.read_gb_s_runs)),
        "bandwidth {ticked:?}"
    );
    assert!(
        within(ticked.dispatch_us, runs(|r| &r.dispatch_us_runs)),
        "dispatch {ticked:?}"
    );
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

//! Bandwidth probe: the read GB/s of a streaming kernel, the cost of one more dispatch inside a
//! pass, and the completion latency — the measured roof and the fixed per-token costs of the
//! model in DESIGN.md: `time per token ≈ bytes ÷ bandwidth + dispatches × cost per dispatch +
//! sync`.
//!
//! Every rate comes from a difference, never from one submit (core's `roofline::probe`): a
//! submit of 1 and of n dispatches, n grown until the extra time is at least 100 ms and 20
//! completion latencies, so a browser that learns of finished work late (Firefox: on a 100 ms
//! timer) or a GPU that streams 256 MB in 0.08 ms (an H100) is measured, not the submit's round
//! trip. Where the adapter has `timestamp-query`, each pass is also timed on the GPU's clock and
//! those figures are reported beside the wall clock's.

use crate::{GpuContext, GpuError};
use serde::Serialize;
use tokscope_core::roofline::probe::{Latency, needed_difference, next_count, per_extra};
use tokscope_core::stats::median;

pub const SHADER: &str = crate::wgsl!("probe.wgsl");

/// Streaming dispatches in the long submit at most (256 MB each: 4 TB).
const MAX_STREAMS: u32 = 16_384;
/// Empty dispatches in the long submit at most.
const MAX_EMPTY: u32 = 1 << 20;
/// Samples of the completion latency.
const LATENCY_SAMPLES: usize = 7;

#[derive(Debug, Clone, Serialize)]
pub struct ProbeResult {
    /// Bytes one streaming dispatch reads.
    pub bytes: u64,
    /// Median of the runs' read bandwidth, GB/s (wall clock, from differences; the faster
    /// pattern's where both were measured).
    pub read_gb_s: f64,
    pub read_gb_s_runs: Vec<f64>,
    /// Streaming dispatches in the long submit, and its extra time over the short one (ms, median).
    pub stream_dispatches: u32,
    pub stream_extra_ms: f64,
    /// Median cost of one more empty dispatch, µs (wall clock, from differences).
    pub dispatch_us: f64,
    pub dispatch_us_runs: Vec<f64>,
    /// Empty dispatches in the long submit, and its extra time (ms, median).
    pub empty_dispatches: u32,
    pub empty_extra_ms: f64,
    /// Submit of one empty dispatch → its 4 bytes mapped on the host.
    pub latency: Latency,
    /// The same differences on the GPU's own clock (`timestamp-query`), where offered.
    pub gpu_clock: Option<GpuClock>,
}

/// Figures from GPU timestamps at each pass's ends: the kernels' time alone, no host in it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GpuClock {
    pub read_gb_s: f64,
    pub dispatch_us: f64,
}

/// Bytes streamed: 256 MB where the device allows, else half its largest binding.
pub fn probe_bytes(ctx: &GpuContext) -> u64 {
    let limit = ctx
        .limits
        .max_storage_buffer_binding_size
        .min(ctx.limits.max_buffer_size);
    (256u64 << 20).min(limit / 2) / 16 * 16
}

/// Runs the probe natively, blocking on the device.
#[cfg(not(target_arch = "wasm32"))]
pub fn run(ctx: &GpuContext, runs: usize) -> Result<ProbeResult, GpuError> {
    run_with(
        ctx,
        &Native {
            runs,
            ..Native::default()
        },
    )
}

/// How a native probe runs, beyond [`run`]'s defaults.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Clone, Copy, Default)]
pub struct Native {
    /// Pairs measured per figure.
    pub runs: usize,
    /// As if the host learned of each completion only at the next tick of a `tick_s` timer after
    /// the submit (as Firefox's WebGPU does, every 100 ms): for testing that the probe measures
    /// the device through such a browser, and for `tokscope probe --tick-ms`.
    pub tick_s: Option<f64>,
    /// Each difference at least this long (seconds), over what the latency asks: so an
    /// undelayed probe can submit as much work as a ticked one, whose figures it is compared
    /// with (lavapipe's cost per dispatch falls as a submit grows: its thread pool stays awake).
    pub at_least_s: f64,
}

#[cfg(not(target_arch = "wasm32"))]
pub fn run_with(ctx: &GpuContext, how: &Native) -> Result<ProbeResult, GpuError> {
    let start = std::time::Instant::now();
    let now = || start.elapsed().as_secs_f64();
    let settle = |since: f64| {
        if let Some(t) = how.tick_s {
            let waited = now() - since;
            let due = (waited / t).ceil().max(1.0) * t;
            std::thread::sleep(std::time::Duration::from_secs_f64((due - waited).max(0.0)));
        }
    };
    pollster::block_on(probe(ctx, how.runs, how.at_least_s, &now, &settle))
}

/// The probe on any target; `now` is a clock in seconds (`Instant` natively,
/// `performance.now()` in a worker), since the timing is submit → done as the caller sees it.
pub async fn run_async(ctx: &GpuContext, runs: usize, now: &dyn Fn() -> f64) -> Result<ProbeResult, GpuError> {
    probe(ctx, runs, 0.0, now, &|_| {}).await
}

/// One timed submit: wall seconds from submit until its read-back is mapped, and the pass's
/// GPU seconds where timestamps are on.
#[derive(Debug, Clone, Copy)]
struct Timed {
    wall: f64,
    gpu: Option<f64>,
}

/// A short and a long submit `runs` times over: the long one's dispatch count, and each pair.
struct Series {
    n: u32,
    pairs: Vec<(Timed, Timed)>,
}

impl Series {
    /// Per extra dispatch, seconds, from each pair (wall clock, or the GPU's).
    fn per_extra(&self, gpu: bool) -> Vec<f64> {
        let pick = |t: &Timed| if gpu { t.gpu } else { Some(t.wall) };
        self.pairs
            .iter()
            .filter_map(|(a, b)| per_extra(pick(a)?, pick(b)?, self.n))
            .collect()
    }

    fn extra_ms(&self) -> f64 {
        median(
            &self
                .pairs
                .iter()
                .map(|(a, b)| (b.wall - a.wall) * 1e3)
                .collect::<Vec<_>>(),
        )
    }
}

/// Grows the long submit from 2 dispatches until it takes `needed` seconds more than one
/// dispatch (or `max` dispatches), then measures the pair `runs` times (the last growth step
/// counting as the first).
async fn series(
    time: &impl AsyncFn(u32) -> Result<Timed, GpuError>,
    needed: f64,
    max: u32,
    runs: usize,
) -> Result<Series, GpuError> {
    let mut one = time(1).await?;
    let mut n = 2;
    let mut many = time(n).await?;
    while many.wall - one.wall < needed && n < max {
        n = next_count(n, many.wall - one.wall, needed, max);
        one = time(1).await?;
        many = time(n).await?;
    }
    let mut pairs = vec![(one, many)];
    while pairs.len() < runs {
        pairs.push((time(1).await?, time(n).await?));
    }
    Ok(Series { n, pairs })
}

/// GPU timestamps at a pass's two ends, resolved into a buffer the read-back copies.
struct Stamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    period_s: f64,
}

async fn probe(
    ctx: &GpuContext,
    runs: usize,
    at_least_s: f64,
    now: &dyn Fn() -> f64,
    settle: &dyn Fn(f64),
) -> Result<ProbeResult, GpuError> {
    let dev = &ctx.device;
    let module = ctx.shader("probe.wgsl", SHADER);
    let tiny = ctx.pipeline(&module, "tiny");
    let bytes = probe_bytes(ctx);
    // The matvec's pattern on this adapter (matvec.rs's `Shape`): on CPU adapters each invocation
    // streams its own rows (a few runs per CPU thread: an invocation is a SIMD lane), which reads
    // faster there than interleaved lanes (examples/stream_patterns.rs); on GPUs four 16-byte
    // loads a lane per trip round the loop, a few trips each. A browser says only whether its
    // adapter is a fallback (wgpu's `Cpu`) or not (`Other`). Where the kind is unknown both
    // patterns stream and the faster counts: the device's bandwidth is the most it reads.
    let runs_pattern = ("stream_runs", 64);
    let lanes_pattern = ("stream_read", (bytes / 16 / 256 / 16).clamp(1, 65_535) as u32);
    let patterns = match ctx.kind {
        wgpu::DeviceType::Other => vec![lanes_pattern, runs_pattern],
        kind if crate::matvec::Shape::for_device(kind) == crate::matvec::Shape::CPU => vec![runs_pattern],
        _ => vec![lanes_pattern],
    };
    let buffer = |label, size, usage| ctx.buffer(label, size, usage);
    let src = buffer("probe source", bytes, wgpu::BufferUsages::STORAGE);
    let sink = buffer(
        "probe sink",
        1024,
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    );
    let stamps = ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY).then(|| Stamps {
        set: dev.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("probe"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        }),
        resolve: buffer(
            "probe timestamps",
            16,
            wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        ),
        period_s: ctx.queue.get_timestamp_period() as f64 * 1e-9,
    });
    let bind = |p: &wgpu::ComputePipeline, with_src: bool| {
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 1,
            resource: sink.as_entire_binding(),
        }];
        if with_src {
            entries.insert(
                0,
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: src.as_entire_binding(),
                },
            );
        }
        dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &p.get_bind_group_layout(0),
            entries: &entries,
        })
    };
    let tiny_bind = bind(&tiny, false);
    let staging = crate::readback::Staging::new(ctx, 16);
    // One submit of a pass holding `n` dispatches of `p`, then a read-back (the pass's
    // timestamps, or 4 bytes of the sink), timed from submit until the bytes are mapped.
    let timed =
        async |p: &wgpu::ComputePipeline, b: &wgpu::BindGroup, n: u32, groups: u32| -> Result<Timed, GpuError> {
            let mut enc = dev.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: stamps.as_ref().map(|s| wgpu::ComputePassTimestampWrites {
                        query_set: &s.set,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: Some(1),
                    }),
                });
                pass.set_pipeline(p);
                pass.set_bind_group(0, b, &[]);
                for _ in 0..n {
                    pass.dispatch_workgroups(groups, 1, 1);
                }
            }
            let read = match &stamps {
                Some(s) => {
                    enc.resolve_query_set(&s.set, 0..2, &s.resolve, 0);
                    staging.copy_from(&mut enc, &s.resolve, 16);
                    16
                }
                None => {
                    staging.copy_from(&mut enc, &sink, 4);
                    4
                }
            };
            let start = now();
            ctx.queue.submit([enc.finish()]);
            let mut out = Vec::new();
            staging.read_async(ctx, read, &mut out).await?;
            settle(start);
            let wall = now() - start;
            let gpu = stamps.as_ref().map(|s| {
                let t: [u64; 2] = bytemuck::pod_read_unaligned(&out[..16]);
                t[1].saturating_sub(t[0]) as f64 * s.period_s
            });
            Ok(Timed { wall, gpu })
        };
    // Warm-up: first use, shader compilation.
    timed(&tiny, &tiny_bind, 1, 1).await?;
    let mut samples = Vec::with_capacity(LATENCY_SAMPLES);
    for _ in 0..LATENCY_SAMPLES {
        samples.push(timed(&tiny, &tiny_bind, 1, 1).await?.wall * 1e3);
    }
    let latency = Latency::from_samples(&samples)
        .ok_or_else(|| GpuError::Readback("the probe's completion latency has no usable sample".into()))?;
    let needed = needed_difference(latency.median_ms * 1e-3).max(at_least_s);
    let runs = runs.max(1);
    let gb_s = |per: Vec<f64>| per.into_iter().map(|s| bytes as f64 / s / 1e9).collect::<Vec<_>>();
    let us = |per: Vec<f64>| per.into_iter().map(|s| s * 1e6).collect::<Vec<_>>();
    // Each pattern's series; the one with the highest median bandwidth counts.
    let mut best: Option<(f64, Vec<f64>, Series)> = None;
    for (entry, groups) in patterns {
        let stream = ctx.pipeline(&module, entry);
        let stream_bind = bind(&stream, true);
        timed(&stream, &stream_bind, 1, groups).await?;
        let streams = series(
            &async |n| timed(&stream, &stream_bind, n, groups).await,
            needed,
            MAX_STREAMS,
            runs,
        )
        .await?;
        let runs_gb_s = gb_s(streams.per_extra(false));
        if runs_gb_s.is_empty() {
            return Err(GpuError::Readback(format!(
                "the bandwidth probe saw no extra time for {} more streaming dispatches",
                streams.n - 1
            )));
        }
        let m = median(&runs_gb_s);
        if best.as_ref().is_none_or(|(b, ..)| m > *b) {
            best = Some((m, runs_gb_s, streams));
        }
    }
    let (read_gb_s, read_gb_s_runs, streams) = best.expect("one pattern or more");
    let empty = series(&async |n| timed(&tiny, &tiny_bind, n, 1).await, needed, MAX_EMPTY, runs).await?;
    // Launches too cheap to show within the cap cost nothing measurable: 0.
    let dispatch_us_runs = us(empty.per_extra(false));
    let dispatch_us = if dispatch_us_runs.is_empty() {
        0.0
    } else {
        median(&dispatch_us_runs)
    };
    let gpu_clock = stamps.as_ref().and_then(|_| {
        let (bw, per) = (gb_s(streams.per_extra(true)), us(empty.per_extra(true)));
        (!bw.is_empty()).then(|| GpuClock {
            read_gb_s: median(&bw),
            dispatch_us: if per.is_empty() { 0.0 } else { median(&per) },
        })
    });
    Ok(ProbeResult {
        bytes,
        read_gb_s,
        read_gb_s_runs,
        stream_dispatches: streams.n,
        stream_extra_ms: streams.extra_ms(),
        dispatch_us,
        dispatch_us_runs,
        empty_dispatches: empty.n,
        empty_extra_ms: empty.extra_ms(),
        latency,
        gpu_clock,
    })
}

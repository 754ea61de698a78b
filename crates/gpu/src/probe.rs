//! Bandwidth probe: read GB/s of a streaming kernel (median of ≥ 5 runs after warm-up), the
//! cost of one more dispatch inside a pass, and of a submit + read-back round trip. These are
//! the measured roof and the fixed per-token costs of the model in DESIGN.md:
//! `time per token ≈ bytes ÷ bandwidth + dispatches × cost per dispatch + sync`.

use crate::GpuContext;
use serde::Serialize;

pub const SHADER: &str = crate::wgsl!("probe.wgsl");

#[derive(Debug, Clone, Serialize)]
pub struct ProbeResult {
    pub bytes: u64,
    pub read_gb_s: f64,
    pub read_gb_s_runs: Vec<f64>,
    pub dispatch_us: f64,
    pub round_trip_ms: f64,
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
pub fn run(ctx: &GpuContext, runs: usize) -> Result<ProbeResult, crate::GpuError> {
    let start = std::time::Instant::now();
    pollster::block_on(run_async(ctx, runs, &|| start.elapsed().as_secs_f64()))
}

/// Waits until the GPU has finished everything submitted so far. In the browser the event loop
/// resolves it; natively the device is polled here.
async fn submitted_work_done(ctx: &GpuContext) -> Result<(), crate::GpuError> {
    let (tx, rx) = futures_channel::oneshot::channel();
    ctx.queue.on_submitted_work_done(move || {
        let _ = tx.send(());
    });
    #[cfg(not(target_arch = "wasm32"))]
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| crate::GpuError::Readback(e.to_string()))?;
    rx.await.map_err(|e| crate::GpuError::Readback(e.to_string()))
}

/// The probe on any target; `now` is a clock in seconds (`Instant` natively,
/// `performance.now()` in a worker), since the timing is submit → done as the caller sees it.
pub async fn run_async(ctx: &GpuContext, runs: usize, now: &dyn Fn() -> f64) -> Result<ProbeResult, crate::GpuError> {
    use tokscope_core::stats::median;
    let dev = &ctx.device;
    let module = ctx.shader("probe.wgsl", SHADER);
    // The matvec's pattern on this adapter (matvec.rs's `Shape`): on CPU adapters each invocation
    // streams its own rows, which reads faster there than interleaved lanes (examples/stream_patterns.rs).
    let cpu = crate::matvec::Shape::for_device(ctx.info.device_type) == crate::matvec::Shape::CPU;
    let entry = if cpu { "stream_runs" } else { "stream_read" };
    let (stream, tiny) = (ctx.pipeline(&module, entry), ctx.pipeline(&module, "tiny"));
    let bytes = probe_bytes(ctx);
    let src = ctx.create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe source"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let sink = ctx.create_buffer(&wgpu::BufferDescriptor {
        label: Some("probe sink"),
        size: 1024,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
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
    let (stream_bind, tiny_bind) = (bind(&stream, true), bind(&tiny, false));
    let groups = if cpu {
        // A few runs per CPU thread (an invocation is a SIMD lane; workgroups spread over threads).
        64
    } else {
        (bytes / 16 / 256).clamp(1, 4096) as u32
    };
    let staging = crate::readback::Staging::new(ctx, 4);
    // Times one submit of a pass holding `n` dispatches of `p` (then a 4-byte read-back when
    // `read`), waiting for completion.
    let timed = async |p: &wgpu::ComputePipeline,
                       b: &wgpu::BindGroup,
                       n: u32,
                       groups: u32,
                       read: bool|
           -> Result<f64, crate::GpuError> {
        let mut enc = dev.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(p);
            pass.set_bind_group(0, b, &[]);
            for _ in 0..n {
                pass.dispatch_workgroups(groups, 1, 1);
            }
        }
        if read {
            staging.copy_from(&mut enc, &sink, 4);
        }
        let start = now();
        ctx.queue.submit([enc.finish()]);
        let mut out = Vec::new();
        match read {
            #[cfg(not(target_arch = "wasm32"))]
            true => staging.read(ctx, 4, &mut out)?,
            #[cfg(target_arch = "wasm32")]
            true => staging.read_async(4, &mut out).await?,
            false => submitted_work_done(ctx).await?,
        }
        Ok(now() - start)
    };
    timed(&stream, &stream_bind, 1, groups, false).await?; // warm-up: first use, shader compilation
    let runs = runs.max(5);
    let mut gb_s = Vec::with_capacity(runs);
    for _ in 0..runs {
        gb_s.push(bytes as f64 / timed(&stream, &stream_bind, 1, groups, false).await? / 1e9);
    }
    const MANY: u32 = 200;
    timed(&tiny, &tiny_bind, MANY, 1, false).await?;
    let (mut one, mut many) = (vec![], vec![]);
    for _ in 0..runs {
        one.push(timed(&tiny, &tiny_bind, 1, 1, false).await?);
        many.push(timed(&tiny, &tiny_bind, MANY, 1, false).await?);
    }
    let dispatch_us = ((median(&many) - median(&one)) / (MANY - 1) as f64 * 1e6).max(0.0);
    let mut trips = vec![];
    for _ in 0..runs {
        trips.push(timed(&tiny, &tiny_bind, 1, 1, true).await? * 1e3);
    }
    Ok(ProbeResult {
        bytes,
        read_gb_s: median(&gb_s),
        read_gb_s_runs: gb_s,
        dispatch_us,
        round_trip_ms: median(&trips),
    })
}

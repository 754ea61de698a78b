//! The nudge: an empty submit every few milliseconds while a read-back waits, for browsers that
//! learn of finished work only when they next poll the device (Firefox: on a 100 ms timer, or at
//! a submit). Whether it pays is measured once per device ([`settle`]); the reasons and the
//! decision rule are tokscope-core's `roofline::completion`.

use crate::{GpuContext, GpuError};
use std::sync::atomic::{AtomicU32, Ordering};
use tokscope_core::roofline::completion::{Completion, NUDGE_MS, worth_nudging};
use tokscope_core::roofline::probe::Latency;

/// Samples of each latency.
const SAMPLES: usize = 7;

/// Whether reads nudge the queue while they wait, and how often (0: never).
#[derive(Debug, Default)]
pub struct Nudge {
    every_ms: AtomicU32,
}

impl Nudge {
    pub fn every_ms(&self) -> Option<u32> {
        match self.every_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(ms),
        }
    }

    pub fn set(&self, every_ms: Option<u32>) {
        self.every_ms.store(every_ms.unwrap_or(0), Ordering::Relaxed);
    }
}

/// Measures the completion latency of a 4-byte read-back, and where it is a timer's tick, the
/// same nudged (unless `may_nudge` is false); leaves `ctx.nudge` on where that at least halves
/// it, off elsewhere. `now`: seconds.
pub async fn settle(ctx: &GpuContext, now: &dyn Fn() -> f64, may_nudge: bool) -> Result<Completion, GpuError> {
    let staging = crate::readback::Staging::new(ctx, 4);
    let src = ctx.create_buffer(&wgpu::BufferDescriptor {
        label: Some("completion probe"),
        size: 4,
        usage: wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let latency = async || -> Result<Latency, GpuError> {
        let mut samples = Vec::with_capacity(SAMPLES);
        let mut out = Vec::new();
        // The first read warms the path up and is not counted.
        for i in 0..=SAMPLES {
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            staging.copy_from(&mut enc, &src, 4);
            let start = now();
            ctx.queue.submit([enc.finish()]);
            staging.read_async(ctx, 4, &mut out).await?;
            if i > 0 {
                samples.push((now() - start) * 1e3);
            }
        }
        Latency::from_samples(&samples).ok_or_else(|| GpuError::Readback("no completion latency sample".into()))
    };
    ctx.nudge.set(None);
    let plain = latency().await?;
    let mut nudged = None;
    if may_nudge && plain.tick_ms.is_some() {
        ctx.nudge.set(Some(NUDGE_MS));
        nudged = Some(latency().await?);
    }
    let nudging = nudged.is_some_and(|n| worth_nudging(&plain, &n));
    ctx.nudge.set(nudging.then_some(NUDGE_MS));
    Ok(Completion { plain, nudged, nudging })
}

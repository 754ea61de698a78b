//! Copying results back to the CPU: a staging buffer, a map, a wait. Native blocks here; the
//! browser awaits the map instead ([`Staging::read_async`]).

use crate::{GpuContext, GpuError};

/// A mappable buffer made once and reused, so reading a token's result allocates nothing on
/// the GPU.
pub struct Staging {
    buf: wgpu::Buffer,
}

impl Staging {
    pub fn new(ctx: &GpuContext, bytes: u64) -> Self {
        Self {
            buf: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size: bytes.max(4),
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
                mapped_at_creation: false,
            }),
        }
    }

    /// Records the copy of `bytes` from the start of `src` (which needs COPY_SRC usage).
    pub fn copy_from(&self, enc: &mut wgpu::CommandEncoder, src: &wgpu::Buffer, bytes: u64) {
        enc.copy_buffer_to_buffer(src, 0, &self.buf, 0, bytes);
    }

    fn take(&self, bytes: u64, out: &mut Vec<u8>) -> Result<(), GpuError> {
        let view = self
            .buf
            .slice(..bytes)
            .get_mapped_range()
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        out.clear();
        out.extend_from_slice(&view);
        drop(view);
        self.buf.unmap();
        Ok(())
    }

    /// Waits for the submitted work and reads the first `bytes` (native only): [`read_async`]
    /// polls the device before it awaits, so blocking on it returns at once.
    ///
    /// [`read_async`]: Staging::read_async
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read(&self, ctx: &GpuContext, bytes: u64, out: &mut Vec<u8>) -> Result<(), GpuError> {
        pollster::block_on(self.read_async(ctx, bytes, out))
    }

    /// Awaits the map (the browser's event loop drives it) and reads the first `bytes`; where
    /// `ctx.nudge` is on, submits nothing every so often while it waits (completion.rs).
    /// Natively the device is polled first, so this answers there too.
    pub async fn read_async(&self, ctx: &GpuContext, bytes: u64, out: &mut Vec<u8>) -> Result<(), GpuError> {
        let (tx, mut rx) = futures_channel::oneshot::channel();
        self.buf.slice(..bytes).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        #[cfg(not(target_arch = "wasm32"))]
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        let mapped = match ctx.nudge.every_ms() {
            Some(ms) => loop {
                if let Some(r) = first_or_timeout(&mut rx, ms).await {
                    break r;
                }
                ctx.queue.submit([]);
            },
            None => rx.await,
        };
        mapped
            .map_err(|e| GpuError::Readback(e.to_string()))?
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        self.take(bytes, out)
    }
}

/// The receiver's value, or `None` once `ms` milliseconds pass without one (a browser's timer;
/// natively there is nothing to wait for: the device was polled).
async fn first_or_timeout<T>(
    rx: &mut futures_channel::oneshot::Receiver<T>,
    ms: u32,
) -> Option<Result<T, futures_channel::oneshot::Canceled>> {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::Poll;
    #[cfg(target_arch = "wasm32")]
    let mut timer = gloo_timers::future::TimeoutFuture::new(ms);
    #[cfg(not(target_arch = "wasm32"))]
    let mut timer = {
        let _ = ms;
        std::future::ready(())
    };
    std::future::poll_fn(|cx| {
        if let Poll::Ready(r) = Pin::new(&mut *rx).poll(cx) {
            return Poll::Ready(Some(r));
        }
        Pin::new(&mut timer).poll(cx).map(|()| None)
    })
    .await
}

/// Reads `n` f32 values from the start of `src` (which needs COPY_SRC usage), with a staging
/// buffer of its own: for tests and one-off reads, not the per-token path.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_f32(ctx: &GpuContext, src: &wgpu::Buffer, n: usize) -> Result<Vec<f32>, GpuError> {
    let bytes = (n * 4) as u64;
    let staging = Staging::new(ctx, bytes);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    staging.copy_from(&mut enc, src, bytes);
    ctx.queue.submit([enc.finish()]);
    let mut out = Vec::new();
    staging.read(ctx, bytes, &mut out)?;
    Ok(bytemuck::pod_collect_to_vec(&out))
}

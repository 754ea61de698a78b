//! Copying results back to the CPU: a staging buffer, a map, a wait. Native only blocks here;
//! the browser path awaits the map instead (the async engine API).

/// Reads `n` f32 values from the start of `src` (which needs COPY_SRC usage).
#[cfg(not(target_arch = "wasm32"))]
pub fn read_f32(ctx: &crate::GpuContext, src: &wgpu::Buffer, n: usize) -> Result<Vec<f32>, crate::GpuError> {
    use crate::GpuError;
    let size = (n * 4) as u64;
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(src, 0, &staging, 0, size);
    ctx.queue.submit([enc.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| GpuError::Readback(e.to_string()))?;
    rx.recv()
        .map_err(|e| GpuError::Readback(e.to_string()))?
        .map_err(|e| GpuError::Readback(e.to_string()))?;
    let view = staging
        .slice(..)
        .get_mapped_range()
        .map_err(|e| GpuError::Readback(e.to_string()))?;
    let out = bytemuck::cast_slice(&view).to_vec();
    drop(view);
    staging.unmap();
    Ok(out)
}

//! The embedding lookup on the GPU (embed.wgsl): each pass's first dispatches read the row of
//! the token in `tokens[col]` from the packed embedding and write it into `x`, so a token costs
//! the host four bytes, not a row, and a chained step (chain.rs) can take the token the step
//! before it chose without a round trip. Types without a lookup kernel (Q2_K, Q3_K) keep the
//! host's rows: `Model::embed`, written with the pass.

use crate::GpuContext;
use crate::matvec::GpuMatrix;
use std::ops::Range;
use tokscope_core::quant::GgmlType;

pub const EMBED_SHADER: &str = crate::wgsl!("embed.wgsl");

/// Outputs per workgroup (embed.wgsl's `WG`).
const WG: u32 = 64;

/// embed.wgsl's `TY` for an embedding of type `ty`, where it has a lookup kernel.
pub fn kernel_type(ty: GgmlType) -> Option<u32> {
    Some(match ty {
        GgmlType::F32 => 0,
        GgmlType::F16 => 1,
        GgmlType::BF16 => 2,
        GgmlType::Q8_0 => 3,
        GgmlType::Q4_0 => 4,
        GgmlType::Q4_1 => 5,
        GgmlType::Q5_0 => 6,
        GgmlType::Q5_1 => 7,
        GgmlType::Q4_K => 8,
        GgmlType::Q5_K => 9,
        GgmlType::Q6_K => 10,
        _ => return None,
    })
}

/// embed.wgsl's `Embed`: one row slice of the embedding and where its regions sit.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct EmbedShape {
    rows_from: u32,
    rows: u32,
    cols: u32,
    group: u32,
    scales_at: u32,
    qh_at: u32,
    scale: f32,
    _pad: u32,
}

/// The lookup's pipeline for an embedding of type `ty` (`None`: no kernel for it).
pub(crate) fn pipeline(ctx: &GpuContext, ty: GgmlType) -> Option<wgpu::ComputePipeline> {
    let ty = kernel_type(ty)?;
    let module = ctx.shader("embed.wgsl", EMBED_SHADER);
    Some(ctx.pipeline_with(&module, "embed", &[("TY", ty as f64), ("WG", WG as f64)]))
}

/// One lookup dispatch per row slice of `slices`, reading tokens from `tokens` into `x`, each
/// value times `scale` (the family's embedding scale).
pub(crate) fn bind(
    ctx: &GpuContext,
    pipeline: &wgpu::ComputePipeline,
    slices: &[(Range<usize>, GpuMatrix)],
    scale: f32,
    tokens: &wgpu::Buffer,
    x: &wgpu::Buffer,
) -> Vec<(wgpu::BindGroup, u32)> {
    slices
        .iter()
        .map(|(rows, m)| {
            let shape = EmbedShape {
                rows_from: rows.start as u32,
                rows: rows.len() as u32,
                cols: m.cols as u32,
                group: m.group as u32,
                scales_at: m.scales_at as u32,
                qh_at: m.qh_at as u32,
                scale,
                _pad: 0,
            };
            let uniform = ctx.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("embed shape"),
                contents: bytemuck::bytes_of(&shape),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("embed"),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: m.weights.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: tokens.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: x.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 3,
                        resource: uniform.as_entire_binding(),
                    },
                ],
            });
            (bind, (m.cols as u32).div_ceil(WG))
        })
        .collect()
}

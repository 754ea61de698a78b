//! Fused dequantize × matrix-vector kernels (matvec.wgsl), one entry point per weight type,
//! and the weights they read, uploaded once.

use crate::repack::Packed;
use crate::{GpuContext, GpuError};
use std::collections::HashMap;
use tokscope_core::quant::GgmlType;
use wgpu::util::DeviceExt;

pub const SHADER: &str = include_str!("matvec.wgsl");
/// Rows each 64-thread workgroup computes (16 lanes per row).
pub const ROWS_PER_GROUP: u32 = 4;

pub fn entry_point(ty: GgmlType) -> Option<&'static str> {
    Some(match ty {
        GgmlType::F32 => "matvec_f32",
        GgmlType::F16 => "matvec_f16",
        GgmlType::BF16 => "matvec_bf16",
        GgmlType::Q8_0 => "matvec_q8_0",
        GgmlType::Q4_0 => "matvec_q4_0",
        GgmlType::Q4_1 => "matvec_q4_1",
        _ => return None,
    })
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    scales_at: u32,
    accumulate: u32,
}

/// A weight matrix on the GPU with its kernel parameters.
pub struct GpuMatrix {
    pub name: String,
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub weights: wgpu::Buffer,
    params: wgpu::Buffer,
}

impl GpuMatrix {
    pub fn upload(ctx: &GpuContext, name: &str, packed: &Packed) -> Result<Self, GpuError> {
        Self::upload_with(ctx, name, packed, false)
    }

    /// With `accumulate`, the kernel adds into its output (`y += W·x`): the residual add fused
    /// into the projection that produces it.
    pub fn upload_with(ctx: &GpuContext, name: &str, packed: &Packed, accumulate: bool) -> Result<Self, GpuError> {
        ctx.check_binding(name, packed.n_bytes())?;
        let weights = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(name),
            contents: bytemuck::cast_slice(&packed.words),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let params = Params {
            rows: packed.rows as u32,
            cols: packed.cols as u32,
            scales_at: packed.scales_at as u32,
            accumulate: accumulate as u32,
        };
        let params = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("matvec params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        Ok(Self {
            name: name.to_string(),
            ty: packed.ty,
            rows: packed.rows,
            cols: packed.cols,
            weights,
            params,
        })
    }
}

/// Workgroups for `rows`, folded into two dimensions past the per-dimension limit.
pub fn dispatch_size(rows: usize, max_per_dim: u32) -> (u32, u32) {
    let groups = (rows as u32).div_ceil(ROWS_PER_GROUP);
    if groups <= max_per_dim {
        (groups, 1)
    } else {
        (max_per_dim, groups.div_ceil(max_per_dim))
    }
}

/// Every matvec pipeline, compiled at load.
pub struct MatvecKernels {
    pipelines: HashMap<GgmlType, wgpu::ComputePipeline>,
    max_per_dim: u32,
}

impl MatvecKernels {
    pub fn new(ctx: &GpuContext) -> Self {
        let module = ctx.shader("matvec.wgsl", SHADER);
        let pipelines = GgmlType::SUPPORTED
            .iter()
            .map(|&ty| {
                (
                    ty,
                    ctx.pipeline(&module, entry_point(ty).expect("every supported type has a kernel")),
                )
            })
            .collect();
        Self {
            pipelines,
            max_per_dim: ctx.limits.max_compute_workgroups_per_dimension,
        }
    }

    /// The bind group of `m` reading `x` and writing `y`; made once at load, reused per token.
    pub fn bind(&self, ctx: &GpuContext, m: &GpuMatrix, x: &wgpu::Buffer, y: &wgpu::Buffer) -> wgpu::BindGroup {
        ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(&m.name),
            layout: &self.pipelines[&m.ty].get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: m.weights.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: x.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: y.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: m.params.as_entire_binding(),
                },
            ],
        })
    }

    /// Records one matvec dispatch into `pass`.
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>, m: &GpuMatrix, bind: &wgpu::BindGroup) {
        pass.set_pipeline(&self.pipelines[&m.ty]);
        pass.set_bind_group(0, bind, &[]);
        let (x, y) = dispatch_size(m.rows, self.max_per_dim);
        pass.dispatch_workgroups(x, y, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_folds_past_the_limit() {
        assert_eq!(dispatch_size(37, 65535), (10, 1));
        assert_eq!(dispatch_size(49152, 65535), (12288, 1));
        assert_eq!(dispatch_size(4 * 70000, 65535), (65535, 2));
    }

    /// The probe's and the layer ops' shaders validate too.
    #[test]
    fn other_shaders_validate() {
        for (name, src) in [
            ("probe.wgsl", crate::probe::SHADER),
            ("ops.wgsl", crate::engine::OPS_SHADER),
        ] {
            let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{name}: {e}"));
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        }
    }

    /// Every entry point parses and validates with naga, without a GPU (so a shader error is a
    /// test failure here, not an `unwrap` at pipeline creation on someone's machine).
    #[test]
    fn shader_validates() {
        let module = naga::front::wgsl::parse_str(SHADER).expect("matvec.wgsl parses");
        // unpack2x16float is core WGSL (WebGPU) and available on every Vulkan/Metal/DX12 device.
        let caps = naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
            .validate(&module)
            .expect("matvec.wgsl validates");
        for ty in GgmlType::SUPPORTED {
            let name = entry_point(ty).unwrap();
            assert!(module.entry_points.iter().any(|e| e.name == name), "{name}");
        }
    }
}

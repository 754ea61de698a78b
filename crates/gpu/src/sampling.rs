//! Sampling on the GPU (sample.wgsl): temperature, top-k and top-p over the top-k candidates,
//! with the host's uniform draw, so a sampled decode can chain (chain.rs) as a greedy one does,
//! and chained and one-step decodes of a seed choose alike (the same kernel, the same draws).
//! Greedy decoding records nothing: candidate 0 is already its choice.

use crate::GpuContext;
use crate::graph::MAX_TOP_K;
use tokscope_core::roofline::chain::MAX_CHAIN;
use tokscope_core::sampling::SamplingParams;

pub const SAMPLE_SHADER: &str = crate::wgsl!("sample.wgsl");

/// Whether the GPU samples for these parameters: not greedy (candidate 0 is that choice), and
/// a top-k cut the candidates hold (without one every logit counts: the host samples).
pub fn on_gpu(p: &SamplingParams) -> bool {
    !p.is_greedy() && (1..=MAX_TOP_K).contains(&p.top_k)
}

/// sample.wgsl's `Sampling`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    temperature: f32,
    top_p: f32,
    k: u32,
    _pad: u32,
}

/// The kernel, its parameters and the draw it reads; a chain's draws, copied into place a step
/// at a time.
pub(crate) struct GpuSampler {
    pipeline: wgpu::ComputePipeline,
    pub bind: wgpu::BindGroup,
    params: wgpu::Buffer,
    pub draw: wgpu::Buffer,
    pub chain_draws: wgpu::Buffer,
    /// The parameters written, where the GPU samples.
    on: Option<Params>,
}

impl GpuSampler {
    pub fn new(ctx: &GpuContext, candidates: &wgpu::Buffer) -> Self {
        let module = ctx.shader("sample.wgsl", SAMPLE_SHADER);
        let pipeline = ctx.pipeline(&module, "sample");
        let buffer = |label, size, usage| ctx.buffer(label, size, usage);
        let params = buffer(
            "sampling",
            16,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let draw = buffer("draw", 16, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST);
        let chain_draws = buffer(
            "chain draws",
            (MAX_CHAIN * 4) as u64,
            wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        );
        fn entry(binding: u32, buf: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
            wgpu::BindGroupEntry {
                binding,
                resource: buf.as_entire_binding(),
            }
        }
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("sample"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[entry(0, candidates), entry(1, &draw), entry(2, &params)],
        });
        Self {
            pipeline,
            bind,
            params,
            draw,
            chain_draws,
            on: None,
        }
    }

    /// Samples on the GPU from now on with `p` where [`on_gpu`] holds, else not.
    pub fn set(&mut self, queue: &wgpu::Queue, p: &SamplingParams) {
        let want = on_gpu(p).then_some(Params {
            temperature: p.temperature,
            top_p: p.top_p,
            k: p.top_k as u32,
            _pad: 0,
        });
        if let Some(w) = want
            && self.on != want
        {
            queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&w));
        }
        self.on = want;
    }

    /// The candidates the top-k kernel keeps for it (its `k`), where the GPU samples.
    pub fn candidates(&self) -> Option<usize> {
        self.on.map(|p| p.k as usize)
    }

    /// Records the kernel, where the GPU samples.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        if self.on.is_some() {
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
    }
}

//! The GPU-vs-CPU engine comparison shared by the native (`engine_vs_cpu.rs`) and browser
//! (`browser_engine.rs`) tests: the same tiny models, tokens and tolerance on both.

use std::sync::Arc;
use tokscope_core::model::Model;
use tokscope_core::quant::GgmlType;
use tokscope_core::synthetic::TinyLlama;

pub const TOKENS: [u32; 12] = [1, 77, 104, 105, 200, 3, 45, 45, 260, 12, 99, 2];

/// The tiny synthetic model with every weight (the embedding too) of type `ty`; 256 wide for
/// the K-quants (whole super-blocks).
pub fn tiny_model(ty: GgmlType) -> Arc<Model<Vec<u8>>> {
    let (d_model, ffn_dim) = if ty.block_size() == 256 { (256, 512) } else { (64, 96) };
    let spec = TinyLlama {
        weight_type: ty,
        embd_type: ty,
        tied_output: false,
        d_model,
        ffn_dim,
        ..Default::default()
    };
    Arc::new(Model::load(spec.build()).unwrap())
}

/// `ctx` taken for a discrete GPU, whatever it is: the engine then picks the work shapes real
/// GPUs get (matvec lanes sharing a row pair, narrower workgroups for short matrices, 256-wide
/// ops workgroups, up to 32 attention shares a head), so CPU adapters test those kernels too.
pub fn with_gpu_shapes(mut ctx: tokscope_gpu::GpuContext) -> tokscope_gpu::GpuContext {
    ctx.info.device_type = wgpu::DeviceType::DiscreteGpu;
    ctx.kind = wgpu::DeviceType::DiscreteGpu;
    ctx
}

/// The tiny shape with a 10,000-token vocabulary: top-k's first stage in three chunks of
/// 4,096 logits, the last one partial (`engine::TOP_K_CHUNK`), then the merge of their
/// candidates.
pub fn wide_vocab_model() -> Arc<Model<Vec<u8>>> {
    let tiny = tokscope_core::shaped::ShapeSpec::by_id("tiny").unwrap();
    let spec = tokscope_core::shaped::ShapeSpec { vocab: 10_000, ..*tiny };
    Arc::new(Model::load(spec.build(GgmlType::Q8_0, 7).unwrap()).unwrap())
}

/// Logits with their tokens, highest first, ties to the lower token: what top-k returns.
pub fn ranked(logits: &[f32]) -> Vec<(f32, u32)> {
    let mut order: Vec<(f32, u32)> = logits.iter().enumerate().map(|(j, &v)| (v, j as u32)).collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    order
}

/// Shapes (d_model, heads, KV heads) for attention split across workgroups: a head narrower
/// than the attention workgroup (16) and one wider (128), with a 1,024-token context.
/// F32 layers: with quantized ones, the attention output is rounded to 8-bit blocks before the
/// output projection, and over hundreds of positions a value or two lands on the other side of
/// a rounding step in one engine (Q4_1: 8e-4 of the logits' scale, with one share or four
/// alike), which tests the rounding, not the attention.
pub const LONG_SHAPES: [(usize, usize, usize); 2] = [(64, 4, 2), (256, 2, 1)];

pub fn long_context_model((d_model, n_heads, n_kv_heads): (usize, usize, usize)) -> Arc<Model<Vec<u8>>> {
    let spec = TinyLlama {
        d_model,
        n_heads,
        n_kv_heads,
        context_length: 1024,
        weight_type: GgmlType::F32,
        ..Default::default()
    };
    Arc::new(Model::load(spec.build()).unwrap())
}

/// 600 tokens: several attention workgroups' worth of positions on every adapter.
pub fn long_prompt() -> Vec<u32> {
    (0..600u32).map(|i| (i * 131 + 7) % 260).collect()
}

/// The engines differ by design in one place: the GPU's KV cache is f16 (half the bytes, as
/// llama.cpp's), the CPU engine's f32 (see cpu/kv_cache.rs). Otherwise both round activations to
/// the same 8-bit blocks for quantized weights, so only f32 summation order differs. Measured
/// over these tests, the largest difference as a share of the logits' scale: float models 2.3e-3
/// (F16; 4e-4 F32, 1.7e-4 BF16; summation order alone stayed within 1e-4), quantized 0.9–1.5 %
/// (Q8_0 1.5 %, Q3_K 1.5 %, Q4_1 1.1 %): where activations are rounded, the cache's rounding
/// puts a value on the other side of a rounding step, and the step's reach through the later
/// layers is that large on these tiny models (the CPU engine against itself with one norm nudged
/// by 3 ULPs moves as far: `cpu::engine` test `a_few_ulps_flip_an_activation_rounding_step`).
/// So float models are held to 5e-3 of the scale and quantized ones to 3e-2, about twice what
/// was measured and still far inside what a wrong scale, nibble or position costs (whole units;
/// the matvec tests hold every kernel to 2e-5 on its own; both engines are held to llama.cpp's
/// tokens on the real models by their own parity tests).
pub fn assert_logits_close(ty: GgmlType, step: usize, got: &[f32], want: &[f32]) {
    let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
    let diff = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    let tol = if ty.is_quantized() { 3e-2 } else { 5e-3 };
    assert!(diff <= tol * scale, "{ty} step {step}: max diff {diff} (scale {scale})");
}

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

/// Both engines round activations to the same 8-bit blocks for quantized weights, so only f32
/// summation order differs: float models' logits agree within 1e-4 of their scale. Where
/// activations are rounded, that order can put a value on the other side of a rounding step in
/// one engine, and the step's reach through the later layers is up to ≈ 0.6 % of the logits'
/// scale on these tiny models: the CPU engine against itself with one norm nudged by 3 ULPs moves
/// as far (`cpu::engine` test `a_few_ulps_flip_an_activation_rounding_step`). So quantized models
/// are held to 1e-2 of the scale, still far inside what a wrong scale, nibble or position costs
/// (whole units; the matvec tests hold every kernel to 2e-5 on its own). A Q3_K model (its
/// embedding too; Q2_K likewise) is made of few distinct values, so rounding ties are common and a step's
/// reach larger: 1.1 % of the scale measured (40 tokens: 1e-6 everywhere but a few steps at
/// 5e-2 of 6.6), so 2e-2 for it.
pub fn assert_logits_close(ty: GgmlType, step: usize, got: &[f32], want: &[f32]) {
    let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
    let diff = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    let tol = match ty {
        GgmlType::Q3_K | GgmlType::Q2_K => 2e-2,
        t if t.is_quantized() => 1e-2,
        _ => 1e-4,
    };
    assert!(diff <= tol * scale, "{ty} step {step}: max diff {diff} (scale {scale})");
}

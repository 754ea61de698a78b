//! The GPU-vs-CPU engine comparison shared by the native (`engine_vs_cpu.rs`) and browser
//! (`browser_engine.rs`) tests: the same tiny models, tokens and tolerance on both.

use std::sync::Arc;
use tokscope_core::model::Model;
use tokscope_core::quant::GgmlType;
use tokscope_core::synthetic::TinyLlama;

pub const TOKENS: [u32; 12] = [1, 77, 104, 105, 200, 3, 45, 45, 260, 12, 99, 2];

/// The tiny synthetic model with every weight (the embedding too) of type `ty`.
pub fn tiny_model(ty: GgmlType) -> Arc<Model<Vec<u8>>> {
    let spec = TinyLlama {
        weight_type: ty,
        embd_type: ty,
        tied_output: false,
        ..Default::default()
    };
    Arc::new(Model::load(spec.build()).unwrap())
}

/// Both engines round activations to the same 8-bit blocks for quantized weights, so only f32
/// summation order differs: logits agree within 1e-4 of their scale.
pub fn assert_logits_close(ty: GgmlType, step: usize, got: &[f32], want: &[f32]) {
    let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
    let diff = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(
        diff <= 1e-4 * scale,
        "{ty} step {step}: max diff {diff} (scale {scale})"
    );
}

#![cfg(not(target_arch = "wasm32"))]
//! The whole GPU forward pass against the CPU engine on the tiny synthetic models (every weight
//! type; awkward context positions), on lavapipe in CI.

mod common;
#[path = "common/compare.rs"]
mod compare;

use compare::{TOKENS, assert_logits_close, tiny_model};

use std::sync::Arc;
use tokscope_core::cpu::CpuEngine;
use tokscope_core::model::Model;
use tokscope_core::quant::GgmlType;
use tokscope_core::synthetic::TinyLlama;
use tokscope_gpu::engine::GpuEngine;

#[test]
fn gpu_logits_match_cpu_engine_for_every_weight_type() {
    let Some(ctx) = common::gpu() else { return };
    let ctx = Arc::new(ctx);
    for ty in GgmlType::SUPPORTED {
        let model = tiny_model(ty);
        let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
        let mut gpu = GpuEngine::new(ctx.clone(), model, 32, |_, _| {}).unwrap();
        assert_eq!(gpu.dispatches_per_token(), 2 * 5 + 2);
        for (i, &t) in TOKENS.iter().enumerate() {
            let want = cpu.decode(t).unwrap().to_vec();
            let got = gpu.decode(t).unwrap();
            assert_logits_close(ty, i, &got, &want);
        }
        assert!(gpu.decode(1).is_ok());
    }
}

#[test]
fn context_full_and_bad_token_are_errors() {
    let Some(ctx) = common::gpu() else { return };
    let model = Arc::new(Model::load(TinyLlama::default().build()).unwrap());
    let mut gpu = GpuEngine::new(Arc::new(ctx), model, 2, |_, _| {}).unwrap();
    assert!(
        gpu.decode(9999)
            .unwrap_err()
            .to_string()
            .contains("outside the vocabulary")
    );
    gpu.prefill(&[1, 2], tokscope_gpu::engine::Want::Top(1)).unwrap();
    assert!(gpu.decode(3).unwrap_err().to_string().contains("context full"));
    gpu.reset();
    assert!(gpu.decode(3).is_ok());
}

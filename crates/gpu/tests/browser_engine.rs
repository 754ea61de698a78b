#![cfg(target_arch = "wasm32")]
// The engine shares its context through an Arc; on wasm (one thread) wgpu's types are not Send.
#![allow(clippy::arc_with_non_send_sync)]
//! The GPU engine in headless Chromium's WebGPU, inside a dedicated worker as the page runs it
//! (SwiftShader where there is no GPU), against the CPU engine on the tiny synthetic models:
//! the same check as `engine_vs_cpu.rs` natively, through the async read-back the browser
//! needs. Run by scripts/test.sh with chromedriver (see webdriver.json beside Cargo.toml).

use std::sync::Arc;
use tokscope_core::cpu::CpuEngine;
use tokscope_core::model::Model;
use tokscope_core::quant::GgmlType;
use tokscope_core::synthetic::TinyLlama;
use tokscope_gpu::GpuContext;
use tokscope_gpu::engine::{GpuEngine, Want};
use wasm_bindgen_test::*;

#[path = "common/compare.rs"]
mod compare;
use compare::{TOKENS, assert_logits_close, tiny_model};

wasm_bindgen_test_configure!(run_in_dedicated_worker);

#[wasm_bindgen_test]
async fn gpu_logits_match_cpu_engine_in_the_browser() {
    let ctx = Arc::new(
        GpuContext::new()
            .await
            .expect("a WebGPU adapter (Chromium with --enable-unsafe-webgpu)"),
    );
    for ty in GgmlType::SUPPORTED {
        let model = tiny_model(ty);
        let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
        let mut gpu = GpuEngine::new(ctx.clone(), model, 32, |_, _| {}).unwrap();
        for (i, &t) in TOKENS.iter().enumerate() {
            let want = cpu.decode(t).unwrap().to_vec();
            gpu.submit(t, Want::Logits).unwrap();
            let got = gpu.read_async().await.unwrap().into_logits();
            assert_logits_close(ty, i, &got, &want);
        }
    }
}

#[wasm_bindgen_test]
async fn prefill_then_top_k_matches_the_cpu_engine() {
    let ctx = Arc::new(GpuContext::new().await.unwrap());
    let model = Arc::new(Model::load(TinyLlama::default().build()).unwrap());
    let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut gpu = GpuEngine::new(ctx.clone(), model, 32, |_, _| {}).unwrap();
    let want = cpu.prefill(&TOKENS).unwrap().to_vec();
    gpu.submit_prefill(&TOKENS, Want::Top(4)).unwrap();
    if let Some(e) = scope.pop().await {
        panic!("WebGPU validation error: {e}");
    }
    let top = gpu.read_async().await.unwrap().into_top();
    let mut order: Vec<u32> = (0..want.len() as u32).collect();
    order.sort_by(|&a, &b| want[b as usize].total_cmp(&want[a as usize]));
    assert_eq!(top.iter().map(|p| p.1).collect::<Vec<_>>(), order[..4].to_vec());
}

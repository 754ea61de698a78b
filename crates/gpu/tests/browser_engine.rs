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
use tokscope_gpu::matvec::{MAX_COLUMNS, gpu_types};
use wasm_bindgen_test::*;

#[path = "common/compare.rs"]
mod compare;
use compare::{
    LONG_SHAPES, TOKENS, assert_logits_close, long_context_model, long_prompt, ranked, tiny_model, wide_vocab_model,
    with_gpu_shapes,
};

wasm_bindgen_test_configure!(run_in_dedicated_worker);

#[wasm_bindgen_test]
async fn gpu_logits_match_cpu_engine_in_the_browser() {
    let ctx = Arc::new(
        GpuContext::new()
            .await
            .expect("a WebGPU adapter (Chromium with --enable-unsafe-webgpu)"),
    );
    for ty in gpu_types() {
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

/// The kernels as real GPUs run them (native: engine_vs_cpu.rs), in the browser's WebGPU: every
/// weight type decoding, then a long context over many attention shares.
#[wasm_bindgen_test]
async fn the_gpus_work_shapes_match_the_cpu_engine() {
    let ctx = Arc::new(with_gpu_shapes(GpuContext::new().await.unwrap()));
    for ty in gpu_types() {
        let model = tiny_model(ty);
        let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
        let mut gpu = GpuEngine::new(ctx.clone(), model, 32, |_, _| {}).unwrap();
        for (i, &t) in TOKENS[..4].iter().enumerate() {
            let want = cpu.decode(t).unwrap().to_vec();
            gpu.submit(t, Want::Logits).unwrap();
            let got = gpu.read_async().await.unwrap().into_logits();
            assert_logits_close(ty, i, &got, &want);
        }
    }
    let model = long_context_model(LONG_SHAPES[0]);
    let mut cpu = CpuEngine::new(model.clone(), 700).unwrap();
    let mut gpu = GpuEngine::new(ctx.clone(), model, 700, |_, _| {}).unwrap();
    let want = cpu.prefill(&long_prompt()).unwrap().to_vec();
    gpu.submit_prefill(&long_prompt(), Want::Logits).unwrap();
    let got = gpu.read_async().await.unwrap().into_logits();
    assert_logits_close(GgmlType::F32, 0, &got, &want);
}

/// gemma3 (head norms, post-norms, GELU, sliding windows), qwen2 and qwen3 in the browser's
/// WebGPU, with WebGPU's validation watching the Q/K/V step and post-norm bindings.
#[wasm_bindgen_test]
async fn every_family_matches_the_cpu_engine_in_the_browser() {
    use tokscope_core::model::Family;
    let ctx = Arc::new(GpuContext::new().await.unwrap());
    for family in [Family::Gemma3, Family::Qwen2, Family::Qwen3] {
        let spec = TinyLlama {
            family,
            n_layers: if family == Family::Gemma3 { 6 } else { 2 },
            ..Default::default()
        };
        let model = Arc::new(Model::load(spec.build()).unwrap());
        let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut gpu = GpuEngine::new(ctx.clone(), model, 32, |_, _| {}).unwrap();
        for (i, &t) in TOKENS.iter().enumerate() {
            let want = cpu.decode(t).unwrap().to_vec();
            gpu.submit(t, Want::Logits).unwrap();
            let got = gpu.read_async().await.unwrap().into_logits();
            assert_logits_close(GgmlType::Q4_1, i, &got, &want);
        }
        if let Some(e) = scope.pop().await {
            panic!("{family:?}: WebGPU validation error: {e}");
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

/// Passes of several columns in the browser: a prompt longer than one pass (a full chunk and a
/// partial one), a second sequence, then one batched step of both, each against the CPU engine.
#[wasm_bindgen_test]
async fn chunked_prefill_and_batched_decode_match_the_cpu_engine() {
    let ctx = Arc::new(GpuContext::new().await.unwrap());
    let model = tiny_model(GgmlType::Q4_1);
    let long: Vec<u32> = (0..MAX_COLUMNS as u32 + 5).map(|i| (i * 37 + 5) % 256).collect();
    let prompts: [&[u32]; 2] = [&long, &[5, 6]];
    let mut gpu = GpuEngine::with_sequences(ctx, model.clone(), 64, 2, |_, _| {}).unwrap();
    let mut cpus = Vec::new();
    for (s, p) in prompts.iter().enumerate() {
        let mut cpu = CpuEngine::new(model.clone(), 64).unwrap();
        let want = cpu.prefill(p).unwrap().to_vec();
        gpu.submit_prefill_seq(s, p, Want::Logits).unwrap();
        let got = gpu.read_async().await.unwrap().into_logits();
        assert_logits_close(GgmlType::Q4_1, s, &got, &want);
        cpus.push(cpu);
    }
    gpu.submit_batch(&[7, 8], Want::Logits).unwrap();
    let got = gpu.read_all_async().await.unwrap();
    for (s, (cpu, t)) in cpus.iter_mut().zip([7, 8]).enumerate() {
        let want = cpu.decode(t).unwrap().to_vec();
        assert_logits_close(GgmlType::Q4_1, s, &got[s].clone().into_logits(), &want);
    }
}

/// Attention split across workgroups in the browser (native: engine_vs_cpu.rs), then the top-k
/// of the last logits for k = 40 against their sorted order.
#[wasm_bindgen_test]
async fn long_contexts_and_top_k_match_the_cpu_engine() {
    let ctx = Arc::new(GpuContext::new().await.unwrap());
    for shape in LONG_SHAPES {
        let model = long_context_model(shape);
        let prompt = long_prompt();
        let mut cpu = CpuEngine::new(model.clone(), 700).unwrap();
        let mut gpu = GpuEngine::new(ctx.clone(), model, 700, |_, _| {}).unwrap();
        let want = cpu.prefill(&prompt).unwrap().to_vec();
        gpu.submit_prefill(&prompt, Want::Logits).unwrap();
        let got = gpu.read_async().await.unwrap().into_logits();
        assert_logits_close(GgmlType::F32, 0, &got, &want);
        gpu.submit(TOKENS[0], Want::Logits).unwrap();
        let logits = gpu.read_async().await.unwrap().into_logits();
        let want = cpu.decode(TOKENS[0]).unwrap().to_vec();
        assert_logits_close(GgmlType::F32, 1, &logits, &want);
        // The same step again from a fresh engine, for its top 40.
        let mut top = GpuEngine::new(ctx.clone(), long_context_model(shape), 700, |_, _| {}).unwrap();
        top.submit_prefill(&prompt, Want::Top(1)).unwrap();
        top.read_async().await.unwrap();
        top.submit(TOKENS[0], Want::Top(40)).unwrap();
        let got = top.read_async().await.unwrap().into_top();
        assert_eq!(got, ranked(&logits)[..40]);
    }
}

/// Top-k over a vocabulary of several chunks in the browser (native: engine_vs_cpu.rs): the
/// logits against the CPU engine, the top 64 against their sorted order.
#[wasm_bindgen_test]
async fn top_k_over_chunks_matches_the_cpu_engine() {
    let ctx = Arc::new(GpuContext::new().await.unwrap());
    let model = wide_vocab_model();
    let mut cpu = CpuEngine::new(model.clone(), 32).unwrap();
    let mut gpu = GpuEngine::new(ctx.clone(), model.clone(), 32, |_, _| {}).unwrap();
    let mut top = GpuEngine::new(ctx, model, 32, |_, _| {}).unwrap();
    for &t in &[5u32, 9_999] {
        gpu.submit(t, Want::Logits).unwrap();
        let logits = gpu.read_async().await.unwrap().into_logits();
        assert_logits_close(GgmlType::Q8_0, 0, &logits, cpu.decode(t).unwrap());
        top.submit(t, Want::Top(64)).unwrap();
        let got = top.read_async().await.unwrap().into_top();
        assert_eq!(got, ranked(&logits)[..64]);
    }
}

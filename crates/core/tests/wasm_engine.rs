//! The same engine, tokenizer and sampler natively and in WebAssembly (the browser's CPU
//! fallback): this file runs under `cargo test` and, compiled to wasm32, under
//! wasm-bindgen-test-runner in Node (`scripts/test.sh`). Both must produce the pinned ids.

use std::sync::Arc;
use tokscope_core::cpu::CpuEngine;
use tokscope_core::model::Model;
use tokscope_core::sampling::{Sampler, SamplingParams, argmax};
use tokscope_core::synthetic::TinyLlama;
use tokscope_core::tokenizer::Tokenizer;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// Greedy tokens of the default tiny model after the prompt "the cat".
const GREEDY: [u32; 12] = [119; 12];
/// Tokens sampled at temperature 20 with seed 7 (top-k off, top-p 0.9).
const SAMPLED: [u32; 12] = [208, 12, 25, 135, 235, 147, 65, 144, 165, 21, 77, 147];

fn generate(params: SamplingParams) -> Vec<u32> {
    let model = Arc::new(Model::load(TinyLlama::default().build()).unwrap());
    let tok = Tokenizer::from_gguf(&model.gguf).unwrap();
    let prompt = tok.encode("the cat").unwrap();
    let mut engine = CpuEngine::new(model, 64).unwrap();
    let mut sampler = Sampler::new(params).unwrap();
    let mut next = sampler.sample(engine.prefill(&prompt).unwrap());
    let mut out = vec![next];
    while out.len() < 12 {
        next = sampler.sample(engine.decode(next).unwrap());
        out.push(next);
    }
    out
}

#[test]
fn greedy_tokens_are_pinned() {
    let params = SamplingParams {
        temperature: 0.0,
        ..Default::default()
    };
    assert_eq!(generate(params), GREEDY);
}

#[test]
fn seeded_sampling_is_pinned() {
    let params = SamplingParams {
        temperature: 20.0,
        top_k: 0,
        top_p: 0.9,
        seed: 7,
    };
    assert_eq!(generate(params), SAMPLED);
}

#[test]
fn sampler_sequence_is_platform_independent() {
    // Same logits and seed as sampling.rs's unit test; same pinned ids.
    let logits: Vec<f32> = (0..100).map(|i| ((i * 7919) % 97) as f32 / 20.0).collect();
    let mut s = Sampler::new(SamplingParams {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        seed: 42,
    })
    .unwrap();
    let ids: Vec<u32> = (0..8).map(|_| s.sample(&logits)).collect();
    assert_eq!(ids, [31, 86, 64, 75, 86, 64, 14, 51]);
    assert_eq!(argmax(&logits), 61);
}

#[test]
fn tokenizer_round_trips_in_both() {
    let model = Model::load(TinyLlama::default().build()).unwrap();
    let tok = Tokenizer::from_gguf(&model.gguf).unwrap();
    let text = "<|im_start|>user\nthe thinner 12 😀<|im_end|>";
    let ids = tok.encode(text).unwrap();
    assert_eq!(ids[0], 1);
    assert_eq!(tok.decode(&ids).unwrap(), text);
}

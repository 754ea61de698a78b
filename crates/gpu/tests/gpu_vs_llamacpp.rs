#![cfg(not(target_arch = "wasm32"))]
//! The GPU engine on SmolLM2-135M Q4_1 and Gemma 3 270M Q4_K_M against llama.cpp's fixtures, by
//! the same rule as the CPU engine (crates/core/tests/llamacpp_parity.rs): no more top-1 flips
//! at gap ≥ 0.1 under teacher forcing than llama.cpp's own numerics variants make, none above
//! its noise (0.5, or the largest gap its variants flip at where that is larger: Gemma's 0.54).

mod common;

use serde::Deserialize;
use std::sync::Arc;
use tokscope_core::model::Model;
use tokscope_gpu::engine::{GpuEngine, Want};

#[derive(Deserialize)]
struct Step {
    token: u32,
    gap: f32,
}

#[derive(Deserialize)]
struct Prompt {
    name: String,
    prompt_ids: Vec<u32>,
    steps: Vec<Step>,
}

#[derive(Deserialize)]
struct Flip {
    gap: f32,
}

#[derive(Deserialize)]
struct SelfNoise {
    flips: Vec<Flip>,
}

#[derive(Deserialize)]
struct Generations {
    self_noise: Vec<SelfNoise>,
    prompts: Vec<Prompt>,
}

#[test]
fn gpu_teacher_forced_top1_agrees_with_llamacpp() {
    teacher_forced("SmolLM2-135M-Instruct.Q4_1.gguf", "llamacpp");
}

/// Gemma 3 on the GPU: head norms, post-norms, GELU, sliding windows and a 262k head in slices.
#[test]
fn gemma3_gpu_teacher_forced_top1_agrees_with_llamacpp() {
    teacher_forced("gemma-3-270m-q4_k_m.gguf", "llamacpp_gemma3");
}

fn teacher_forced(file: &str, fixtures: &str) {
    let Some(ctx) = common::gpu() else { return };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let path = format!("{root}/public/models/{file}");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}; run `cargo xtask fetch-model --all`"));
    let model = Arc::new(Model::load(bytes).unwrap());
    let fixtures = format!("{root}/crates/core/tests/fixtures/{fixtures}/generations.json");
    let g: Generations = serde_json::from_str(&std::fs::read_to_string(fixtures).unwrap()).unwrap();
    let mut gpu = GpuEngine::new(Arc::new(ctx), model, 256, |_, _| {}).unwrap();
    let (mut flips, mut confident) = (vec![], 0);
    for p in &g.prompts {
        gpu.reset();
        // Only the GPU's argmax comes back (top_k with k = 1), as when generating greedily.
        let mut top = gpu.prefill(&p.prompt_ids, Want::Top(1)).unwrap().into_top();
        let mut agree = 0;
        for (i, s) in p.steps.iter().enumerate() {
            let ours = top[0].1;
            agree += (ours == s.token) as usize;
            if s.gap >= 0.1 {
                confident += 1;
                if ours != s.token {
                    flips.push((
                        s.gap,
                        format!(
                            "{} step {i}: gpu {ours}, llama.cpp {} (gap {:.3})",
                            p.name, s.token, s.gap
                        ),
                    ));
                }
            }
            top = gpu.decode_top(s.token, 1).unwrap();
        }
        println!("{}: top-1 agrees at {agree}/{} steps", p.name, p.steps.len());
    }
    println!(
        "{file} on the gpu: {} flips of {confident} steps with gap ≥ 0.1: {:?}",
        flips.len(),
        flips
    );
    let self_flips = g.self_noise.iter().map(|n| n.flips.len()).max().unwrap();
    assert!(
        flips.len() <= self_flips,
        "{} flips; llama.cpp's own variants make at most {self_flips}",
        flips.len()
    );
    let noise = g
        .self_noise
        .iter()
        .flat_map(|n| n.flips.iter().map(|f| f.gap))
        .fold(0.5, f32::max);
    assert!(flips.iter().all(|f| f.0 < noise), "{flips:?}");
}

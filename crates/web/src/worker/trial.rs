//! `backend=auto` by measurement (tokscope-core's `engine_trial`): the same greedy steps timed
//! on each engine, so the page runs the one that is faster here, in this browser.

use super::js::now_s;
use std::sync::Arc;
use tokscope_core::engine_trial::{EngineTrial, TRIAL_STEPS, gpu_may_stop};
use tokscope_core::model::Model;
use tokscope_core::sampling::{Sampler, SamplingParams};
use tokscope_gpu::runner::Runner;

/// (steps, seconds) of up to [`TRIAL_STEPS`] greedy steps after a one-token prompt and one
/// untimed step, stopping early where `stop(steps, seconds)` says so; the cache is emptied
/// afterwards (the engine then starts every run as if untried).
async fn time(
    runner: &mut Runner<Vec<u8>>,
    first: u32,
    stop: impl Fn(usize, f64) -> bool,
) -> Result<(usize, f64), String> {
    let greedy = SamplingParams {
        temperature: 0.0,
        ..Default::default()
    };
    let mut sampler = Sampler::new(greedy).map_err(|e| e.to_string())?;
    let e = |e: tokscope_gpu::runner::RunError| e.to_string();
    runner.begin_prefill(&[first], &mut sampler).map_err(e)?;
    let mut token = runner.finish_async(&mut sampler).await.map_err(e)?;
    runner.begin_decode(token, &mut sampler).map_err(e)?;
    token = runner.finish_async(&mut sampler).await.map_err(e)?;
    let start = now_s();
    let mut steps = 0;
    while steps < TRIAL_STEPS && !stop(steps, now_s() - start) {
        runner.begin_decode(token, &mut sampler).map_err(e)?;
        token = runner.finish_async(&mut sampler).await.map_err(e)?;
        steps += 1;
    }
    let seconds = (now_s() - start).max(1e-6);
    runner.reset();
    Ok((steps, seconds))
}

/// Times a CPU engine over the model, then the GPU engine `gpu` over the same steps (cut short
/// once it cannot win); returns the trial and the CPU engine (for the caller to keep where it
/// won). The model's BOS token (token 0 where the file names none) starts both.
pub async fn run(
    gpu: &mut Runner<Vec<u8>>,
    model: &Arc<Model<Vec<u8>>>,
    context: usize,
) -> Result<(EngineTrial, Runner<Vec<u8>>), String> {
    let first = model
        .gguf
        .opt_u64("tokenizer.ggml.bos_token_id")
        .ok()
        .flatten()
        .filter(|&t| (t as usize) < model.config.vocab_size)
        .unwrap_or(0) as u32;
    let mut cpu = Runner::cpu(model.clone(), context).map_err(|e| e.to_string())?;
    let (cpu_steps, cpu_s) = time(&mut cpu, first, |_, _| false).await?;
    let (gpu_steps, gpu_s) = time(gpu, first, |steps, s| gpu_may_stop(steps, s, cpu_s)).await?;
    let trial = EngineTrial {
        gpu_tok_s: gpu_steps as f64 / gpu_s,
        cpu_tok_s: cpu_steps as f64 / cpu_s,
        gpu_steps,
        cpu_steps,
    };
    Ok((trial, cpu))
}

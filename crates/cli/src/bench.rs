//! `tokscope bench`: decode and prefill speed, with the bytes each token reads, so the result
//! reads as a bandwidth: effective GB/s = tok/s × bytes per token.

use crate::CliResult;
use crate::args::BenchArgs;
use crate::model_file::load;
use serde::Serialize;
use std::time::Instant;
use tokscope_core::cpu::CpuEngine;
use tokscope_core::cpu::parallel::threads;
use tokscope_core::sampling::argmax;
use tokscope_core::stats::median;

/// Prompt text for benchmarks: ordinary prose, repeated to the requested length.
const BENCH_TEXT: &str = "The quick brown fox jumps over the lazy dog while the river runs past the old mill, and the miller counts the sacks of flour one by one before the evening bell. ";

/// Tokens of prompt in front of every decode run.
const DECODE_PROMPT_TOKENS: usize = 16;

#[derive(Serialize)]
struct BenchReport {
    backend: &'static str,
    threads: usize,
    model: String,
    tokens: usize,
    runs: usize,
    decode_tok_s: f64,
    decode_tok_s_runs: Vec<f64>,
    prefill_tok_s: f64,
    prompt_tokens: usize,
    /// Mean over the decoded positions: weights + the KV cache read at each position.
    bytes_per_token: f64,
    weight_bytes_per_token: u64,
    effective_gb_s: f64,
}

pub fn run(a: BenchArgs) -> CliResult {
    if a.runs < 3 {
        return Err(format!(
            "--runs must be at least 3 (a median of {} runs says little)",
            a.runs
        ));
    }
    if a.tokens < 2 || a.prompt_tokens == 0 {
        return Err("--tokens must be at least 2 and --prompt-tokens at least 1".into());
    }
    if a.backend == crate::args::Backend::Gpu {
        return Err(
            "bench --backend gpu is not implemented yet (issue #3); `tokscope probe` measures the GPU's roofline"
                .into(),
        );
    }
    let loaded = load(&a.model)?;
    let model = loaded.model.clone();
    let text = BENCH_TEXT.repeat(a.prompt_tokens.div_ceil(16) + 2);
    let mut prompt = loaded.tokenizer.encode(&text).map_err(|e| e.to_string())?;
    prompt.truncate(a.prompt_tokens);
    let decode_prompt = &prompt[..DECODE_PROMPT_TOKENS.min(prompt.len())];
    let context = (prompt.len().max(decode_prompt.len() + a.tokens) + 1).min(model.config.context_length);
    if decode_prompt.len() + a.tokens > context {
        return Err(format!(
            "--tokens {} does not fit the model's context of {}",
            a.tokens, context
        ));
    }
    let mut engine = CpuEngine::new(model.clone(), context).map_err(|e| e.to_string())?;
    let e = |e: tokscope_core::cpu::EngineError| e.to_string();

    // Warm-up: page in the weights, spin up the thread pool.
    engine.prefill(decode_prompt).map_err(e)?;
    for _ in 0..8 {
        engine.decode(0).map_err(e)?;
    }

    let mut decode_runs = Vec::with_capacity(a.runs);
    for _ in 0..a.runs {
        engine.reset();
        let mut next = argmax(engine.prefill(decode_prompt).map_err(e)?);
        let start = Instant::now();
        for _ in 0..a.tokens {
            next = argmax(engine.decode(next).map_err(e)?);
        }
        decode_runs.push(a.tokens as f64 / start.elapsed().as_secs_f64());
    }
    let mut prefill_runs = Vec::with_capacity(a.runs);
    for _ in 0..a.runs {
        engine.reset();
        let start = Instant::now();
        engine.prefill(&prompt).map_err(e)?;
        prefill_runs.push(prompt.len() as f64 / start.elapsed().as_secs_f64());
    }
    let positions = decode_prompt.len()..decode_prompt.len() + a.tokens;
    let bytes_per_token = positions.clone().map(|p| model.bytes_per_token(p) as f64).sum::<f64>() / a.tokens as f64;
    let decode_tok_s = median(&decode_runs);
    let report = BenchReport {
        backend: "cpu",
        threads: threads(),
        model: a.model.display().to_string(),
        tokens: a.tokens,
        runs: a.runs,
        decode_tok_s,
        decode_tok_s_runs: decode_runs,
        prefill_tok_s: median(&prefill_runs),
        prompt_tokens: prompt.len(),
        bytes_per_token,
        weight_bytes_per_token: model.desc.weight_bytes_per_token(),
        effective_gb_s: decode_tok_s * bytes_per_token / 1e9,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        println!("backend:          cpu ({} threads)", report.threads);
        println!(
            "decode:           {:.1} tok/s (median of {} runs of {} tokens)",
            report.decode_tok_s, a.runs, a.tokens
        );
        println!(
            "prefill:          {:.1} tok/s ({} prompt tokens)",
            report.prefill_tok_s, report.prompt_tokens
        );
        println!(
            "bytes per token:  {:.1} MB (weights {:.1} MB + KV cache)",
            bytes_per_token / 1e6,
            report.weight_bytes_per_token as f64 / 1e6
        );
        println!("effective:        {:.2} GB/s", report.effective_gb_s);
    }
    Ok(())
}

//! `tokscope bench`: decode and prefill speed, with the bytes each token reads, so the result
//! reads as a bandwidth: effective GB/s = tok/s × bytes per token.

use crate::CliResult;
use crate::args::BenchArgs;
use crate::engine;
use crate::model_file::load;
use serde::Serialize;
use std::time::Instant;
use tokscope_core::cpu::parallel::threads;
use tokscope_core::model::Model;
use tokscope_core::roofline::mbu;
use tokscope_core::sampling::{Sampler, SamplingParams};
use tokscope_core::stats::median;
use tokscope_core::tokenizer::Tokenizer;
use tokscope_gpu::engine::{KernelClass, Want};
use tokscope_gpu::runner::Runner;

/// Prompt text for benchmarks: ordinary prose, repeated to the requested length.
const BENCH_TEXT: &str = "The quick brown fox jumps over the lazy dog while the river runs past the old mill, and the miller counts the sacks of flour one by one before the evening bell. ";

/// Tokens of prompt in front of every decode run.
const DECODE_PROMPT_TOKENS: usize = 16;

#[derive(Serialize)]
struct BenchReport {
    backend: &'static str,
    /// The GPU adapter's name (backend, device type); the CPU's thread count for `cpu`.
    adapter: String,
    threads: usize,
    model: String,
    batch: usize,
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
    /// The bandwidth probe on the same device (GPU only).
    probe_gb_s: Option<f64>,
    /// decode tok/s × bytes per token ÷ probe bandwidth (GPU only).
    mbu: Option<f64>,
    dispatches_per_token: Option<usize>,
    /// Seconds per kernel class for one decoded token, measured apart from the timed runs.
    time_split: Vec<(KernelClass, f64)>,
}

/// How a report names the CPU backend.
pub fn cpu_label() -> String {
    format!("CPU, {} threads", threads())
}

/// How a report names a GPU adapter: name (backend, device type).
pub fn gpu_label(ctx: &tokscope_gpu::GpuContext) -> String {
    let s = ctx.summary();
    format!("{} ({}, {})", s.name, s.backend, s.device_type)
}

/// The benchmark's prompt: `n` tokens of ordinary prose.
pub fn bench_prompt(tokenizer: &Tokenizer, n: usize) -> Result<Vec<u32>, String> {
    let text = BENCH_TEXT.repeat(n.div_ceil(16) + 2);
    let mut prompt = tokenizer.encode(&text).map_err(|e| e.to_string())?;
    prompt.truncate(n);
    Ok(prompt)
}

/// KV-cache capacity for the prefill run and the decode runs.
pub fn bench_context<B: AsRef<[u8]>>(model: &Model<B>, prompt: &[u32], tokens: usize) -> Result<usize, String> {
    let decode_prompt = DECODE_PROMPT_TOKENS.min(prompt.len());
    let context = (prompt.len().max(decode_prompt + tokens) + 1).min(model.config.context_length);
    if decode_prompt + tokens > context {
        return Err(format!(
            "--tokens {tokens} does not fit the model's context of {context}"
        ));
    }
    Ok(context)
}

pub struct Measured {
    pub decode_runs: Vec<f64>,
    pub prefill_runs: Vec<f64>,
    /// Mean over the decoded positions: weights + the KV cache read at each position.
    pub bytes_per_token: f64,
}

/// Warms up, then times `runs` decodes of `tokens` (after a short prompt) and `runs` prefills of
/// the whole prompt.
pub fn measure<B: AsRef<[u8]>>(
    engine: &mut Runner<B>,
    model: &Model<B>,
    prompt: &[u32],
    tokens: usize,
    runs: usize,
) -> Result<Measured, String> {
    let decode_prompt = &prompt[..DECODE_PROMPT_TOKENS.min(prompt.len())];
    let mut greedy = Sampler::new(SamplingParams::default()).map_err(|e| e.to_string())?;
    // (The default parameters are greedy.)
    // Warm-up: page in the weights, spin up the thread pool, compile the pipelines.
    engine.reset();
    engine.prefill(decode_prompt, &mut greedy).map_err(|e| e.to_string())?;
    for _ in 0..8 {
        engine.decode(0, &mut greedy).map_err(|e| e.to_string())?;
    }
    let mut decode_runs = Vec::with_capacity(runs);
    for _ in 0..runs {
        engine.reset();
        let mut next = engine.prefill(decode_prompt, &mut greedy).map_err(|e| e.to_string())?;
        let start = Instant::now();
        for _ in 0..tokens {
            next = engine.decode(next, &mut greedy).map_err(|e| e.to_string())?;
        }
        decode_runs.push(tokens as f64 / start.elapsed().as_secs_f64());
    }
    let mut prefill_runs = Vec::with_capacity(runs);
    for _ in 0..runs {
        engine.reset();
        let start = Instant::now();
        engine.prefill(prompt, &mut greedy).map_err(|e| e.to_string())?;
        prefill_runs.push(prompt.len() as f64 / start.elapsed().as_secs_f64());
    }
    let positions = decode_prompt.len()..decode_prompt.len() + tokens;
    let bytes_per_token = positions.map(|p| model.bytes_per_token(p) as f64).sum::<f64>() / tokens as f64;
    Ok(Measured {
        decode_runs,
        prefill_runs,
        bytes_per_token,
    })
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
    if !(1..=16).contains(&a.batch) {
        return Err(format!("--batch must be 1 to 16, not {}", a.batch));
    }
    if a.batch > 1 && a.sweep.is_none() {
        return crate::sweep::one_batch(&a);
    }
    if let Some(sweep) = a.sweep {
        return crate::sweep::run(&a, sweep);
    }
    let loaded = load(&a.model)?;
    let model = loaded.model.clone();
    let prompt = bench_prompt(&loaded.tokenizer, a.prompt_tokens)?;
    let decode_prompt = &prompt[..DECODE_PROMPT_TOKENS.min(prompt.len())];
    let context = bench_context(&model, &prompt, a.tokens)?;
    let mut engine = engine::new(a.backend, model.clone(), context)?;
    let Measured {
        decode_runs,
        prefill_runs,
        bytes_per_token,
    } = measure(&mut engine, &model, &prompt, a.tokens, a.runs)?;
    let decode_tok_s = median(&decode_runs);
    let (backend, adapter, probe_gb_s, dispatches, time_split) = match &mut engine {
        Runner::Cpu { .. } => ("cpu", cpu_label(), None, None, vec![]),
        Runner::Gpu(g) => {
            let probe = tokscope_gpu::probe::run(&g.ctx, 5).map_err(|e| e.to_string())?;
            g.reset();
            let split = g.profile(decode_prompt[0], Want::Top(1)).map_err(|e| e.to_string())?;
            g.read().map_err(|e| e.to_string())?;
            (
                "gpu",
                gpu_label(&g.ctx),
                Some(probe.read_gb_s),
                Some(g.dispatches_per_token()),
                split,
            )
        }
    };
    let report = BenchReport {
        backend,
        adapter,
        threads: threads(),
        model: a.model.display().to_string(),
        batch: a.batch,
        tokens: a.tokens,
        runs: a.runs,
        decode_tok_s,
        decode_tok_s_runs: decode_runs,
        prefill_tok_s: median(&prefill_runs),
        prompt_tokens: prompt.len(),
        bytes_per_token,
        weight_bytes_per_token: model.desc.weight_bytes_per_token(),
        effective_gb_s: decode_tok_s * bytes_per_token / 1e9,
        probe_gb_s,
        mbu: probe_gb_s.and_then(|p| mbu(decode_tok_s, bytes_per_token, p * 1e9)),
        dispatches_per_token: dispatches,
        time_split,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!("backend:          {} — {}", report.backend, report.adapter);
    println!(
        "decode:           {:.1} tok/s (median of {} runs of {} tokens, batch {})",
        report.decode_tok_s, a.runs, a.tokens, a.batch
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
    if let (Some(p), Some(m)) = (report.probe_gb_s, report.mbu) {
        println!("probe:            {p:.2} GB/s read bandwidth on the same device");
        println!("MBU:              {:.2} (effective ÷ probe)", m);
    }
    if let Some(d) = report.dispatches_per_token {
        println!("dispatches/token: {d}");
    }
    let total: f64 = report.time_split.iter().map(|(_, s)| s).sum();
    for (class, s) in &report.time_split {
        println!(
            "  {:<15} {:>7.2} ms ({:>4.1} %)",
            format!("{class:?}").to_lowercase(),
            s * 1e3,
            100.0 * s / total
        );
    }
    Ok(())
}

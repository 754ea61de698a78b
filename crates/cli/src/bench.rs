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
use tokscope_core::roofline::floor::{Floor, FloorInputs};
use tokscope_core::roofline::mbu;
use tokscope_core::sampling::{Sampler, SamplingParams};
use tokscope_core::stats::median;
use tokscope_core::tokenizer::Tokenizer;
use tokscope_gpu::decode::{Chain, Decode, why_not_chained};
use tokscope_gpu::engine::{Profile, Want};
use tokscope_gpu::probe::ProbeResult;
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
    /// Chained decode: the steps one submit held on average, and the host's wait for results
    /// per token (ms: time blocked on a chunk's read-back ÷ its steps); `None` where each step
    /// was its own submit.
    steps_per_submit: Option<f64>,
    host_wait_ms_per_token: Option<f64>,
    /// How the decode submitted its steps: "chained", or why one step a submit.
    chain: String,
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
    /// Everything the probe measured: bandwidth, an empty dispatch's cost, the completion latency.
    probe: Option<ProbeResult>,
    /// Dispatches and seconds per kernel class for one decoded token (after the decode runs'
    /// prompt), measured apart from the timed runs.
    profile: Option<Profile>,
    /// Measured step time less the kernels' run time, per dispatch: what launching and waiting
    /// between dependent dispatches costs (GPU timestamps only).
    outside_kernels_us_per_dispatch: Option<f64>,
    /// The floor model: bytes ÷ probed bandwidth + dispatches × probed dispatch + completion wait.
    floor: Option<Floor>,
    /// Measured step time ÷ the floor's.
    floor_ratio: Option<f64>,
}

/// The GPU-only figures of a report.
struct GpuFigures {
    probe: ProbeResult,
    dispatches: usize,
    profile: Profile,
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
    /// Chained decode's steps per submit and the host's wait per token (seconds), over the
    /// timed runs; `None` where each step was its own submit.
    pub chained: Option<(f64, f64)>,
    pub prefill_runs: Vec<f64>,
    /// Mean over the decoded positions: weights + the KV cache read at each position.
    pub bytes_per_token: f64,
}

/// Warms up, then times `runs` decodes of `tokens` (after a short prompt; steps chained as
/// `chain` says, decode.rs) and `runs` prefills of the whole prompt.
pub fn measure<B: AsRef<[u8]>>(
    engine: &mut Runner<B>,
    model: &Model<B>,
    prompt: &[u32],
    tokens: usize,
    runs: usize,
    chain: Chain,
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
    let (mut steps, mut chunks, mut waited) = (0, 0, 0.0);
    let clock = Instant::now();
    let now = || clock.elapsed().as_secs_f64();
    for _ in 0..runs {
        engine.reset();
        let first = engine.prefill(decode_prompt, &mut greedy).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut d = Decode::start(engine, &mut greedy, first, tokens, chain, now()).map_err(|e| e.to_string())?;
        for _ in 0..tokens {
            d.next_blocking(engine, &mut greedy, &now).map_err(|e| e.to_string())?;
        }
        decode_runs.push(tokens as f64 / start.elapsed().as_secs_f64());
        if let Some(c) = d.chained() {
            (steps, chunks, waited) = (steps + c.steps_read, chunks + c.chunks, waited + c.waited_s);
        }
        d.stop(engine);
    }
    let chained = (chunks > 0).then(|| (steps as f64 / chunks as f64, waited / steps as f64));
    let mut prefill_runs = Vec::with_capacity(runs);
    for _ in 0..runs {
        engine.reset();
        let start = Instant::now();
        engine.prefill(prompt, &mut greedy).map_err(|e| e.to_string())?;
        prefill_runs.push(prompt.len() as f64 / start.elapsed().as_secs_f64());
    }
    let positions = decode_prompt.len()..decode_prompt.len() + tokens;
    let bytes_per_token = positions
        .map(|p| model.bytes_per_token(p, engine.kv_value_bytes()) as f64)
        .sum::<f64>()
        / tokens as f64;
    Ok(Measured {
        decode_runs,
        chained,
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
    let greedy = Sampler::new(SamplingParams::default()).map_err(|e| e.to_string())?;
    let chain_note = why_not_chained(&mut engine, &greedy, a.chain);
    let Measured {
        decode_runs,
        chained,
        prefill_runs,
        bytes_per_token,
    } = measure(&mut engine, &model, &prompt, a.tokens, a.runs, a.chain)?;
    let decode_tok_s = median(&decode_runs);
    let (backend, adapter, gpu) = match &mut engine {
        Runner::Cpu { .. } => ("cpu", cpu_label(), None),
        Runner::Gpu(g) => {
            let probe = tokscope_gpu::probe::run(&g.ctx, 5).map_err(|e| e.to_string())?;
            // A token at the decode runs' position, so attention sees a cache of that length.
            g.reset();
            g.prefill(decode_prompt, Want::Top(1)).map_err(|e| e.to_string())?;
            let profile = g.profile(decode_prompt[0], Want::Top(1)).map_err(|e| e.to_string())?;
            g.read().map_err(|e| e.to_string())?;
            let figures = GpuFigures {
                probe,
                dispatches: g.dispatches_per_token(),
                profile,
            };
            ("gpu", gpu_label(&g.ctx), Some(figures))
        }
    };
    let probe_gb_s = gpu.as_ref().map(|f| f.probe.read_gb_s);
    let floor_inputs = gpu.as_ref().map(|f| FloorInputs {
        bytes_per_token,
        bandwidth_gb_s: f.probe.read_gb_s,
        dispatches: f.dispatches as u32,
        dispatch_us: f.probe.dispatch_us,
        latency_ms: f.probe.latency.median_ms,
        tick_ms: f.probe.latency.tick_ms,
        steps_per_submit: chained.map_or(1.0, |c| c.0),
    });
    let floor = floor_inputs.and_then(|i| i.floor().ok());
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
        steps_per_submit: chained.map(|c| c.0),
        host_wait_ms_per_token: chained.map(|c| c.1 * 1e3),
        chain: chain_note.unwrap_or_else(|| "chained".into()),
        prefill_tok_s: median(&prefill_runs),
        prompt_tokens: prompt.len(),
        bytes_per_token,
        weight_bytes_per_token: model.desc.weight_bytes_per_token(),
        effective_gb_s: decode_tok_s * bytes_per_token / 1e9,
        probe_gb_s,
        mbu: probe_gb_s.and_then(|p| mbu(decode_tok_s, bytes_per_token, p * 1e9)),
        dispatches_per_token: gpu.as_ref().map(|f| f.dispatches),
        // Where the kernels timed alone take longer than the whole step (a CPU adapter: each
        // dispatch's pass wakes its threads anew), nothing is left to call outside them.
        outside_kernels_us_per_dispatch: gpu
            .as_ref()
            .filter(|f| f.profile.timestamps && f.profile.seconds() < 1.0 / decode_tok_s)
            .map(|f| (1.0 / decode_tok_s - f.profile.seconds()) / f.dispatches as f64 * 1e6),
        floor_ratio: floor.and_then(|f| f.measured_ratio(decode_tok_s)),
        floor,
        probe: gpu.as_ref().map(|f| f.probe.clone()),
        profile: gpu.map(|f| f.profile),
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
    match (report.steps_per_submit, report.host_wait_ms_per_token) {
        (Some(k), Some(w)) => println!(
            "chained:          {k:.1} steps a submit; the host waited {w:.3} ms a token for results, beside a {:.3} ms step",
            1e3 / report.decode_tok_s
        ),
        _ => println!("chained:          no — {}", report.chain),
    }
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
    if let (Some(d), Some(p), Some(profile)) = (report.dispatches_per_token, &report.probe, &report.profile) {
        print_profile(
            d,
            p,
            profile,
            report.decode_tok_s,
            report.outside_kernels_us_per_dispatch,
        );
    }
    if let (Some(i), Some(f)) = (floor_inputs, report.floor) {
        println!(
            "floor model:      {:.3} ms a token = {:.3} ms of bytes + {:.3} ms of dispatches + {:.3} ms waiting for completion ({:.0} tok/s)",
            f.step_s * 1e3,
            f.bytes_s * 1e3,
            f.dispatch_s * 1e3,
            f.sync_s * 1e3,
            f.tok_s
        );
        println!("                  {}", i.sentence(&f));
        if let Some(m) = f.measured_sentence(report.decode_tok_s) {
            println!("                  {m}");
        }
    }
    Ok(())
}

/// Where one token's time goes: per kernel class, dispatches, run time and µs per dispatch;
/// then the step's time outside the kernels per dispatch, beside the probe's empty dispatch.
fn print_profile(dispatches: usize, probe: &ProbeResult, profile: &Profile, tok_s: f64, outside_us: Option<f64>) {
    let step = 1.0 / tok_s;
    println!(
        "dispatches/token: {dispatches} ({:.1} µs a dispatch on average; an empty dispatch costs {:.1} µs here, probe)",
        step / dispatches as f64 * 1e6,
        probe.dispatch_us
    );
    let what = if profile.timestamps {
        "kernel run time, GPU timestamps"
    } else {
        "submit to done per dispatch, CPU clock: no timestamp-query"
    };
    println!("one token ({what}):");
    let total = profile.seconds();
    for c in &profile.classes {
        println!(
            "  {:<11} {:>4} dispatches {:>8.3} ms ({:>4.1} %) {:>8.1} µs each",
            c.class.label(),
            c.dispatches,
            c.seconds * 1e3,
            100.0 * c.seconds / total,
            c.seconds / c.dispatches as f64 * 1e6
        );
    }
    match outside_us {
        Some(us) => println!(
            "  outside the kernels: {:.3} ms of the {:.3} ms step = {us:.1} µs a dispatch (launch, barriers, submit, read-back)",
            (step - total) * 1e3,
            step * 1e3
        ),
        None if profile.timestamps => println!(
            "  (the kernels timed one pass each take longer than the {:.3} ms step: on this adapter the split is relative only)",
            step * 1e3
        ),
        None => {}
    }
}

//! `tokscope soak`: a long decode (to the context limit, or `--tokens`) that samples memory as
//! it goes. The engines allocate at load (weights, KV cache, scratch, GPU buffers) and nothing
//! per token, so resident memory and GPU buffers must be flat after the first sample; a leak in
//! the decode loop, the sampler or the streaming detokenizer would show as growth here.

use crate::CliResult;
use crate::args::SoakArgs;
use crate::engine;
use crate::model_file::load;
use std::time::Instant;
use tokscope_core::human;
use tokscope_core::sampling::{Sampler, SamplingParams};

#[derive(serde::Serialize)]
struct Sample {
    tokens: usize,
    /// Resident set size (Linux `/proc/self/status` VmRSS); `None` elsewhere.
    rss_bytes: Option<u64>,
    gpu_buffers: Option<u64>,
    gpu_buffer_bytes: Option<u64>,
}

#[derive(serde::Serialize)]
struct Report {
    backend: &'static str,
    prompt_tokens: usize,
    /// Tokens decoded (the first comes from the prompt's prefill).
    tokens: usize,
    stopped_by_context: bool,
    decode_tok_s: f64,
    samples: Vec<Sample>,
    /// Last sample minus the first (the warm-up point).
    rss_growth_bytes: Option<i64>,
    /// The CPU engine's KV cache is allocated zeroed at load and becomes resident page by page
    /// as positions are written: this many bytes a token (`kv_bytes_per_token`), expected.
    kv_bytes_per_token: u64,
    /// Resident growth beyond the KV cache's own pages: what a leak would show as.
    rss_growth_beyond_kv_bytes: Option<i64>,
    gpu_buffers_growth: Option<i64>,
}

/// This process's resident memory, from `/proc/self/status` (kB there).
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Memory now, printed unless the report goes out as JSON at the end.
fn sample(tokens: usize, gpu: Option<(u64, u64)>, quiet: bool) -> Sample {
    let s = Sample {
        tokens,
        rss_bytes: rss_bytes(),
        gpu_buffers: gpu.map(|g| g.0),
        gpu_buffer_bytes: gpu.map(|g| g.1),
    };
    if !quiet {
        let rss = s.rss_bytes.map_or("n/a".into(), |b| human::bytes(b as f64));
        let gpu = gpu.map_or(String::new(), |(n, b)| {
            format!(", GPU buffers {n} ({})", human::bytes(b as f64))
        });
        println!("{tokens:>6} tokens: resident {rss}{gpu}");
    }
    s
}

pub fn run(a: SoakArgs) -> CliResult {
    if a.every == 0 || a.tokens < 2 * a.every {
        return Err(format!(
            "--tokens ({}) must be at least twice --every ({}): one sample to warm up, one to compare",
            a.tokens, a.every
        ));
    }
    let loaded = load(&a.model)?;
    let tok = &loaded.tokenizer;
    let prompt = tok.encode(&a.prompt).map_err(|e| e.to_string())?;
    if prompt.is_empty() {
        return Err("empty prompt".into());
    }
    let context = (prompt.len() + a.tokens).min(loaded.model.config.context_length);
    let mut engine = engine::new(a.backend, loaded.model.clone(), context)?;
    let mut sampler = Sampler::new(SamplingParams {
        temperature: 0.0,
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    let mut next = engine.prefill(&prompt, &mut sampler).map_err(|e| e.to_string())?;
    let mut stream = tok.stream();
    let mut samples = Vec::new();
    let mut generated = 1;
    let start = Instant::now();
    let stopped_by_context = loop {
        stream.step(next).map_err(|e| e.to_string())?;
        if generated % a.every == 0 {
            samples.push(sample(generated, engine.gpu_buffers(), a.json));
        }
        if generated == a.tokens {
            break false;
        }
        if engine.full().is_some() {
            break true;
        }
        next = engine.decode(next, &mut sampler).map_err(|e| e.to_string())?;
        generated += 1;
    };
    let decode_tok_s = (generated - 1) as f64 / start.elapsed().as_secs_f64();
    if samples.last().is_some_and(|s| s.tokens != generated) {
        samples.push(sample(generated, engine.gpu_buffers(), a.json));
    }
    let growth = |f: &dyn Fn(&Sample) -> Option<u64>| -> Option<i64> {
        let (first, last) = (samples.first()?, samples.last()?);
        Some(f(last)? as i64 - f(first)? as i64)
    };
    let kv_bytes_per_token = match engine.gpu_buffers() {
        Some(_) => 0, // the GPU engine's cache lives in GPU buffers
        None => loaded.model.config.kv_bytes_per_token(engine.kv_value_bytes()),
    };
    let rss_growth_bytes = growth(&|s| s.rss_bytes);
    let span = samples.last().map_or(0, |s| s.tokens) - samples.first().map_or(0, |s| s.tokens);
    let report = Report {
        kv_bytes_per_token,
        rss_growth_beyond_kv_bytes: rss_growth_bytes.map(|g| g - (kv_bytes_per_token * span as u64) as i64),
        backend: if engine.gpu_buffers().is_some() { "gpu" } else { "cpu" },
        prompt_tokens: prompt.len(),
        tokens: generated,
        stopped_by_context,
        decode_tok_s,
        rss_growth_bytes,
        gpu_buffers_growth: growth(&|s| s.gpu_buffers),
        samples,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let first = report.samples.first().map_or(0, |s| s.tokens);
    let why = if report.stopped_by_context {
        " (the context is full)"
    } else {
        ""
    };
    println!("{} tokens{why} at {:.1} tok/s", report.tokens, report.decode_tok_s);
    if let (Some(g), Some(beyond)) = (report.rss_growth_bytes, report.rss_growth_beyond_kv_bytes) {
        println!(
            "resident memory growth after warm-up (token {first} → {}): {} = the KV cache's pages ({} a token) {beyond:+} bytes",
            report.tokens,
            human::bytes(g as f64),
            human::bytes(report.kv_bytes_per_token as f64),
        );
    }
    if let Some(g) = report.gpu_buffers_growth {
        println!("GPU buffers created after warm-up: {g}");
    }
    Ok(())
}

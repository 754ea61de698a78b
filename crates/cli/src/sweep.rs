//! `tokscope bench --sweep precision`: the same weights re-encoded at every precision of the
//! dial, each decoded on the same device, beside the ceiling bandwidth ÷ bytes per token that
//! the probe predicts. `--sweep batch` (and `--batch B`): B sequences decoded together, one read
//! of the weights per step, per-user against aggregate tok/s, on either engine.

use crate::CliResult;
use crate::args::{Backend, BenchArgs, Sweep};
use crate::bench::{Measured, bench_context, bench_prompt, cpu_label, gpu_label, measure};
use crate::engine;
use crate::model_file::{FileBytes, open};
use serde::Serialize;
use std::sync::Arc;
use tokscope_core::gguf::Gguf;
use tokscope_core::model::Model;
use tokscope_core::requant::{DIAL, requantize};
use tokscope_core::stats::median;
use tokscope_core::tokenizer::Tokenizer;
use tokscope_gpu::GpuContext;
use tokscope_gpu::batch::Batch;
use tokscope_gpu::engine::GpuEngine;

#[derive(Serialize)]
struct Row {
    #[serde(rename = "type")]
    ty: &'static str,
    bits_per_weight: f64,
    bytes_per_token: f64,
    decode_tok_s: f64,
    prefill_tok_s: f64,
    effective_gb_s: f64,
    /// probe bandwidth ÷ bytes per token (GPU only).
    predicted_tok_s: Option<f64>,
}

/// A sweep's table, `--json`'s shape for both sweeps.
#[derive(Serialize)]
struct Report<R> {
    sweep: &'static str,
    backend: &'static str,
    adapter: String,
    probe_gb_s: Option<f64>,
    tokens: usize,
    runs: usize,
    rows: Vec<R>,
}

impl<R: Serialize> Report<R> {
    /// Prints the JSON when asked; true when it did.
    fn json(&self, json: bool) -> Result<bool, String> {
        if json {
            println!("{}", serde_json::to_string_pretty(self).map_err(|e| e.to_string())?);
        }
        Ok(json)
    }
}

/// Batch sizes of the batch sweep.
const BATCHES: [usize; 5] = [1, 2, 4, 8, 16];

#[derive(Serialize)]
struct BatchRow {
    batch: usize,
    per_user_tok_s: f64,
    aggregate_tok_s: f64,
    /// Weights once + every sequence's KV cache, averaged over the decoded positions.
    bytes_per_step: f64,
    effective_gb_s: f64,
}

/// Times `runs` batched decodes of `tokens` steps for `b` sequences (each after the same short
/// prompt), greedy per sequence, on the CPU engine or (with `gpu`) the GPU engine.
fn measure_batch<B: AsRef<[u8]>>(
    model: &Arc<Model<B>>,
    gpu: Option<&GpuEngine<B>>,
    prompt: &[u32],
    tokens: usize,
    runs: usize,
    b: usize,
) -> Result<BatchRow, String> {
    let context = prompt.len() + tokens + 9;
    let mut e = match gpu {
        Some(g) => g.ctx.guarded_blocking(|| Batch::gpu_sharing(g, context, b)),
        None => Batch::cpu(model.clone(), context, b),
    }
    .map_err(|e| e.to_string())?;
    let step = |e: &mut Batch<B>, n: usize| -> Result<f64, String> {
        e.reset();
        let mut next = Vec::with_capacity(b);
        for s in 0..b {
            e.begin_prefill(s, prompt).map_err(|e| e.to_string())?;
            next.extend(e.finish().map_err(|e| e.to_string())?);
        }
        let start = std::time::Instant::now();
        for _ in 0..n {
            e.begin_step(&next).map_err(|e| e.to_string())?;
            next = e.finish().map_err(|e| e.to_string())?;
        }
        Ok(n as f64 / start.elapsed().as_secs_f64())
    };
    step(&mut e, 8)?; // warm-up
    let mut rates = Vec::with_capacity(runs);
    for _ in 0..runs {
        rates.push(step(&mut e, tokens)?);
    }
    let per_user = median(&rates);
    let weights = model.desc.weight_bytes_per_token() as f64;
    let kv = (prompt.len()..prompt.len() + tokens)
        .map(|p| (p as u64 + 1) * model.config.kv_bytes_per_token(e.kv_value_bytes()))
        .sum::<u64>() as f64
        / tokens as f64;
    let bytes_per_step = weights + b as f64 * kv;
    Ok(BatchRow {
        batch: b,
        per_user_tok_s: per_user,
        aggregate_tok_s: per_user * b as f64,
        bytes_per_step,
        effective_gb_s: per_user * bytes_per_step / 1e9,
    })
}

fn batch_sweep(a: &BenchArgs, batches: &[usize]) -> CliResult {
    let loaded = crate::model_file::load(&a.model)?;
    let prompt = bench_prompt(&loaded.tokenizer, a.prompt_tokens.min(16))?;
    let (backend, adapter, ctx, probe_gb_s) = match a.backend {
        Backend::Cpu => ("cpu", cpu_label(), None, None),
        Backend::Gpu => {
            let ctx = Arc::new(GpuContext::new_blocking().map_err(|e| e.to_string())?);
            let probe = tokscope_gpu::probe::run(&ctx, 5).map_err(|e| e.to_string())?;
            ("gpu", gpu_label(&ctx), Some(ctx), Some(probe.read_gb_s))
        }
    };
    // One upload of the weights; each batch size is new sequence state over it.
    let base = match ctx {
        Some(ctx) => Some(GpuEngine::new(ctx, loaded.model.clone(), 1, |_, _| {}).map_err(|e| e.to_string())?),
        None => None,
    };
    let mut rows = Vec::new();
    for &b in batches {
        rows.push(measure_batch(
            &loaded.model,
            base.as_ref(),
            &prompt,
            a.tokens,
            a.runs,
            b,
        )?);
    }
    let report = Report {
        sweep: "batch",
        backend,
        adapter,
        probe_gb_s,
        tokens: a.tokens,
        runs: a.runs,
        rows,
    };
    if report.json(a.json)? {
        return Ok(());
    }
    println!(
        "batch sweep — {} — {}{}",
        report.backend,
        report.adapter,
        probe_gb_s.map(|p| format!(", probe {p:.2} GB/s")).unwrap_or_default()
    );
    println!("batch  per-user tok/s  aggregate tok/s  MB/step  effective GB/s");
    for r in &report.rows {
        println!(
            "{:>5} {:>15.1} {:>16.1} {:>8.1} {:>15.2}",
            r.batch,
            r.per_user_tok_s,
            r.aggregate_tok_s,
            r.bytes_per_step / 1e6,
            r.effective_gb_s
        );
    }
    Ok(())
}

/// `tokscope bench --batch B` (B > 1): one row of the batch sweep.
pub fn one_batch(a: &BenchArgs) -> CliResult {
    batch_sweep(a, &[a.batch])
}

pub fn run(a: &BenchArgs, sweep: Sweep) -> CliResult {
    if sweep == Sweep::Batch {
        return batch_sweep(a, &BATCHES);
    }
    let gguf = open(&a.model)?;
    let shown = a.model.display();
    let tokenizer = Tokenizer::from_gguf(&gguf).map_err(|e| format!("{shown}: {e}"))?;
    let (backend, adapter, probe_gb_s) = match a.backend {
        Backend::Cpu => ("cpu", cpu_label(), None),
        Backend::Gpu => {
            let ctx = GpuContext::new_blocking().map_err(|e| e.to_string())?;
            let probe = tokscope_gpu::probe::run(&ctx, 5).map_err(|e| e.to_string())?;
            ("gpu", gpu_label(&ctx), Some(probe.read_gb_s))
        }
    };
    // The same prompt for every precision: the tokenizer does not change with the weights.
    let prompt = bench_prompt(&tokenizer, a.prompt_tokens)?;
    let mut rows = Vec::new();
    for ty in DIAL {
        let bytes = requantize(&gguf, ty, |_, _| {}).map_err(|e| format!("{shown}: {e}"))?;
        let g = Gguf::parse(FileBytes::Owned(bytes)).map_err(|e| format!("{shown} at {ty}: {e}"))?;
        let model = Arc::new(Model::from_gguf(g).map_err(|e| format!("{shown} at {ty}: {e}"))?);
        let context = bench_context(&model, &prompt, a.tokens)?;
        let mut engine = engine::new(a.backend, model.clone(), context).map_err(|e| format!("at {ty}: {e}"))?;
        let Measured {
            decode_runs,
            prefill_runs,
            bytes_per_token,
            ..
        } = measure(&mut engine, &model, &prompt, a.tokens, a.runs, a.chain)?;
        let decode_tok_s = median(&decode_runs);
        // Measured from the matrices, not the type's nominal figure: a K-quant point holds
        // llama.cpp's stand-ins where rows are not whole super-blocks.
        let mats = model
            .desc
            .layers
            .iter()
            .flat_map(|l| l.matrices())
            .chain([&model.desc.output]);
        let (bytes, params) = mats.fold((0, 0), |(b, p), w| (b + w.n_bytes(), p + w.n_params()));
        rows.push(Row {
            ty: ty.name(),
            bits_per_weight: 8.0 * bytes as f64 / params as f64,
            bytes_per_token,
            decode_tok_s,
            prefill_tok_s: median(&prefill_runs),
            effective_gb_s: decode_tok_s * bytes_per_token / 1e9,
            predicted_tok_s: probe_gb_s.map(|p| p * 1e9 / bytes_per_token),
        });
        if !a.json {
            eprintln!("measured {ty}");
        }
    }
    rows.sort_by(|a, b| a.bytes_per_token.total_cmp(&b.bytes_per_token));
    let report = Report {
        sweep: "precision",
        backend,
        adapter,
        probe_gb_s,
        tokens: a.tokens,
        runs: a.runs,
        rows,
    };
    if report.json(a.json)? {
        return Ok(());
    }
    println!(
        "precision sweep — {} — {}{}",
        report.backend,
        report.adapter,
        probe_gb_s.map(|p| format!(", probe {p:.2} GB/s")).unwrap_or_default()
    );
    println!(
        "type   bits/weight  MB/token  decode tok/s  prefill tok/s  effective GB/s  ceiling tok/s  decode ÷ ceiling"
    );
    for r in &report.rows {
        let ceiling = r.predicted_tok_s.map_or("–".into(), |p| format!("{p:.1}"));
        let ratio = r
            .predicted_tok_s
            .map_or("–".into(), |p| format!("{:.2}", r.decode_tok_s / p));
        println!(
            "{:<6} {:>11.2} {:>9.1} {:>13.1} {:>14.1} {:>15.2} {:>14} {:>17}",
            r.ty,
            r.bits_per_weight,
            r.bytes_per_token / 1e6,
            r.decode_tok_s,
            r.prefill_tok_s,
            r.effective_gb_s,
            ceiling,
            ratio
        );
    }
    Ok(())
}

//! `tokscope inspect`: what is in a GGUF and what decoding it costs.

use crate::CliResult;
use crate::args::InspectArgs;
use crate::model_file::open;
use serde::Serialize;
use std::collections::BTreeMap;
use tokscope_core::model::{LlamaConfig, Model};
use tokscope_core::tokenizer::Tokenizer;

#[derive(Serialize)]
struct QuantRow {
    tensors: usize,
    params: u64,
    bytes: u64,
    bits_per_weight: f64,
}

#[derive(Serialize)]
struct TokenizerSummary {
    model: String,
    pre: String,
    vocab_size: usize,
    merges: usize,
    special_tokens: usize,
    bos: Option<String>,
    eos: Option<String>,
    add_bos: bool,
    chat_template: bool,
    /// The template used when the file has none: "gemma" or "chatml".
    #[serde(skip_serializing_if = "Option::is_none")]
    chat_fallback: Option<&'static str>,
}

#[derive(Serialize)]
struct Report {
    file: String,
    gguf_version: u32,
    architecture: String,
    name: Option<String>,
    tensor_count: usize,
    metadata_count: usize,
    total_bytes: u64,
    tensor_bytes: u64,
    quantization: BTreeMap<String, QuantRow>,
    /// Present when the model can be run; otherwise `unsupported` says why.
    config: Option<LlamaConfig>,
    params: Option<u64>,
    weight_bytes_per_token: Option<u64>,
    kv_bytes_per_token: Option<KvBytes>,
    tied_output: Option<bool>,
    tokenizer: Option<TokenizerSummary>,
    unsupported: Vec<String>,
}

/// K and V bytes per token of context in each engine's cache: the GPU's holds f16, the CPU's
/// f32 (`cpu::kv_cache` says why).
#[derive(Serialize)]
struct KvBytes {
    gpu: u64,
    cpu: u64,
}

pub fn run(a: InspectArgs) -> CliResult {
    let gguf = open(&a.file)?;
    let mut quantization: BTreeMap<String, QuantRow> = BTreeMap::new();
    for t in gguf.tensors() {
        let row = quantization.entry(t.ty.name().to_string()).or_insert(QuantRow {
            tensors: 0,
            params: 0,
            bytes: 0,
            bits_per_weight: t.ty.bits_per_weight(),
        });
        row.tensors += 1;
        row.params += t.n_elements();
        row.bytes += t.n_bytes();
    }
    let mut unsupported = Vec::new();
    let tokenizer = match Tokenizer::from_gguf(&gguf) {
        Ok(t) => Some(TokenizerSummary {
            model: t.model_name.clone(),
            pre: t.pre.clone(),
            vocab_size: t.vocab_size,
            merges: t.n_merges,
            special_tokens: t.n_special,
            bos: t.bos.and_then(|i| t.token_text(i)),
            eos: t.eos.and_then(|i| t.token_text(i)),
            add_bos: t.add_bos,
            chat_template: gguf.get("tokenizer.chat_template").is_some(),
            chat_fallback: match tokscope_core::prompt::chat_template_source(&gguf) {
                _ if gguf.get("tokenizer.chat_template").is_some() => None,
                Ok(tokscope_core::chat::GEMMA_TEMPLATE) => Some("gemma"),
                _ => Some("chatml"),
            },
        }),
        Err(e) => {
            unsupported.push(e.to_string());
            None
        }
    };
    let mut report = Report {
        file: a.file.display().to_string(),
        gguf_version: gguf.version,
        architecture: gguf.get_str("general.architecture").unwrap_or("(missing)").to_string(),
        name: gguf.opt_str("general.name").ok().flatten().map(str::to_string),
        tensor_count: gguf.tensors().len(),
        metadata_count: gguf.metadata().len(),
        total_bytes: gguf.file_len(),
        tensor_bytes: gguf.tensors().iter().map(|t| t.n_bytes()).sum(),
        quantization,
        config: None,
        params: None,
        weight_bytes_per_token: None,
        kv_bytes_per_token: None,
        tied_output: None,
        tokenizer,
        unsupported,
    };
    match Model::from_gguf(gguf) {
        Ok(m) => {
            report.params = Some(m.desc.weights().iter().map(|w| w.n_params()).sum());
            report.weight_bytes_per_token = Some(m.desc.weight_bytes_per_token());
            report.kv_bytes_per_token = Some(KvBytes {
                gpu: m.config.kv_bytes_per_token(tokscope_gpu::engine::KV_VALUE_BYTES),
                cpu: m.config.kv_bytes_per_token(tokscope_core::cpu::KV_VALUE_BYTES),
            });
            report.tied_output = Some(m.desc.tied_output);
            report.config = Some(m.config);
        }
        Err(e) => report.unsupported.push(e.to_string()),
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        print_text(&report);
    }
    Ok(())
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn print_text(r: &Report) {
    println!("file:          {}", r.file);
    println!("gguf version:  {}", r.gguf_version);
    println!(
        "architecture:  {}{}",
        r.architecture,
        r.name.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
    );
    println!("tensors:       {} ({} metadata keys)", r.tensor_count, r.metadata_count);
    println!(
        "file size:     {} (tensor data {})",
        mb(r.total_bytes),
        mb(r.tensor_bytes)
    );
    if let Some(c) = &r.config {
        println!(
            "layers {}, d_model {}, heads {} / KV heads {} (head dim {}), FFN {}, vocab {}, context {}",
            c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn_dim, c.vocab_size, c.context_length
        );
        println!(
            "rope base {}, rope dims {}, rms eps {:e}",
            c.rope_freq_base, c.rope_dim, c.rms_eps
        );
    }
    if let Some(p) = r.params {
        println!("parameters:    {:.1} M", p as f64 / 1e6);
    }
    println!("quantization:");
    for (ty, q) in &r.quantization {
        println!(
            "  {ty:<6} {:>4} tensors {:>9.1} M params {:>10}  ({} bits/weight incl. scales)",
            q.tensors,
            q.params as f64 / 1e6,
            mb(q.bytes),
            q.bits_per_weight
        );
    }
    if let (Some(w), Some(kv)) = (r.weight_bytes_per_token, &r.kv_bytes_per_token) {
        let tied = if r.tied_output == Some(true) {
            ", output head tied to the embedding"
        } else {
            ""
        };
        println!(
            "bytes read per decoded token: {} of weights{tied} + {:.1} KB of KV cache per token of context on \
             the GPU (f16; {:.1} KB on the CPU, which keeps f32)",
            mb(w),
            kv.gpu as f64 / 1e3,
            kv.cpu as f64 / 1e3
        );
    }
    if let Some(t) = &r.tokenizer {
        println!(
            "tokenizer:     {} (pre {}), {} tokens, {} merges, {} special; bos {:?}, eos {:?}, add_bos {}, chat template {}",
            t.model,
            t.pre,
            t.vocab_size,
            t.merges,
            t.special_tokens,
            t.bos.as_deref().unwrap_or("-"),
            t.eos.as_deref().unwrap_or("-"),
            t.add_bos,
            match t.chat_fallback {
                None => "yes",
                Some("gemma") => "no (Gemma turns fallback)",
                Some(_) => "no (ChatML fallback)",
            }
        );
    }
    for u in &r.unsupported {
        println!("cannot run:    {u}");
    }
}

//! Llama-family hyperparameters, read from the GGUF's `{arch}.*` keys.
//!
//! Key names: llama.cpp's `LLM_KV_*` table (src/llama-arch.cpp) and the GGUF spec's
//! "LLM" section (ggml/docs/gguf.md).

use super::ModelError;
use crate::gguf::Gguf;
use serde::Serialize;

/// Architectures whose GGUF tensors follow llama's layout and run on our forward pass.
pub const SUPPORTED_ARCHITECTURES: &[&str] = &["llama"];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlamaConfig {
    pub architecture: String,
    pub n_layers: usize,
    pub d_model: usize,
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub head_dim: usize,
    pub ffn_dim: usize,
    pub vocab_size: usize,
    pub context_length: usize,
    pub rope_freq_base: f32,
    pub rope_dim: usize,
    pub rms_eps: f32,
}

impl LlamaConfig {
    pub fn from_gguf<B: AsRef<[u8]>>(g: &Gguf<B>) -> Result<Self, ModelError> {
        let arch = g.get_str("general.architecture")?.to_string();
        if !SUPPORTED_ARCHITECTURES.contains(&arch.as_str()) {
            return Err(ModelError::UnsupportedArchitecture(arch));
        }
        let key = |k: &str| format!("{arch}.{k}");
        let usize_of = |k: &str| -> Result<usize, ModelError> {
            let v = g.get_u64(&key(k))?;
            usize::try_from(v)
                .ok()
                .filter(|&v| v > 0 && v <= 1 << 24)
                .ok_or_else(|| bad(&key(k), format!("{v} is outside 1..=2^24")))
        };
        let n_layers = usize_of("block_count")?;
        let d_model = usize_of("embedding_length")?;
        let n_heads = usize_of("attention.head_count")?;
        let n_kv_heads = match g.opt_u64(&key("attention.head_count_kv"))? {
            Some(_) => usize_of("attention.head_count_kv")?,
            None => n_heads,
        };
        let ffn_dim = usize_of("feed_forward_length")?;
        let context_length = usize_of("context_length")?;
        if d_model % n_heads != 0 {
            return Err(bad(
                &key("attention.head_count"),
                format!("{n_heads} does not divide embedding_length {d_model}"),
            ));
        }
        if n_heads % n_kv_heads != 0 {
            return Err(bad(
                &key("attention.head_count_kv"),
                format!(
                    "{n_kv_heads} does not divide head_count {n_heads} (grouped-query attention needs whole groups)"
                ),
            ));
        }
        let head_dim = match g.opt_u64(&key("attention.key_length"))? {
            Some(_) => usize_of("attention.key_length")?,
            None => d_model / n_heads,
        };
        if head_dim % 2 != 0 {
            return Err(bad(
                &key("attention.key_length"),
                format!("head dimension {head_dim} is odd; RoPE rotates pairs"),
            ));
        }
        let rope_dim = match g.opt_u64(&key("rope.dimension_count"))? {
            Some(_) => usize_of("rope.dimension_count")?,
            None => head_dim,
        };
        if rope_dim > head_dim || rope_dim % 2 != 0 {
            return Err(bad(
                &key("rope.dimension_count"),
                format!("{rope_dim} must be even and at most the head dimension {head_dim}"),
            ));
        }
        let vocab_size = match g.opt_u64(&key("vocab_size"))? {
            Some(_) => usize_of("vocab_size")?,
            None => g.get_array("tokenizer.ggml.tokens")?.len(),
        };
        let rope_freq_base = g.opt_f32(&key("rope.freq_base"))?.unwrap_or(10_000.0);
        let rms_eps = g.opt_f32(&key("attention.layer_norm_rms_epsilon"))?.unwrap_or(1e-5);
        if !(rope_freq_base.is_finite() && rope_freq_base > 1.0) {
            return Err(bad(
                &key("rope.freq_base"),
                format!("{rope_freq_base} must be a finite number above 1"),
            ));
        }
        if !(rms_eps.is_finite() && rms_eps > 0.0 && rms_eps < 1.0) {
            return Err(bad(
                &key("attention.layer_norm_rms_epsilon"),
                format!("{rms_eps} must be in (0, 1)"),
            ));
        }
        Ok(Self {
            architecture: arch,
            n_layers,
            d_model,
            n_heads,
            n_kv_heads,
            head_dim,
            ffn_dim,
            vocab_size,
            context_length,
            rope_freq_base,
            rope_dim,
            rms_eps,
        })
    }

    /// Width of the K and V projections: KV heads × head dimension (smaller than d under GQA).
    pub fn kv_dim(&self) -> usize {
        self.n_kv_heads * self.head_dim
    }

    /// Width of the Q projection and the attention output.
    pub fn q_dim(&self) -> usize {
        self.n_heads * self.head_dim
    }

    /// Bytes of f32 K and V cache per token of context, over all layers.
    pub fn kv_bytes_per_token_f32(&self) -> u64 {
        (2 * self.n_layers * self.kv_dim() * 4) as u64
    }
}

fn bad(key: &str, reason: String) -> ModelError {
    ModelError::BadConfig {
        key: key.to_string(),
        reason,
    }
}

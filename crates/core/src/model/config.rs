//! Hyperparameters of the decoder-only transformers we run (llama, gemma3, qwen2, qwen3), read
//! from the GGUF's `{arch}.*` keys, and what each family changes in the one forward pass.
//!
//! Key names: llama.cpp's `LLM_KV_*` table (src/llama-arch.cpp) and the GGUF spec's
//! "LLM" section (ggml/docs/gguf.md). Per-family facts the file does not carry (Gemma 3's
//! sliding-window pattern and local RoPE base, which RoPE layout each family uses) are
//! llama.cpp's (src/llama-model.cpp: `load_hparams` and `llama_model_rope_type`).

use super::ModelError;
use crate::gguf::Gguf;
use serde::Serialize;

/// Architectures whose GGUF tensors run on our forward pass (`general.architecture`).
pub const SUPPORTED_ARCHITECTURES: &[&str] = &["llama", "gemma3", "qwen2", "qwen3"];

/// The model family: which variations of the llama block the forward pass applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Llama 2/3, SmolLM: pre-norm, SwiGLU, RoPE on adjacent pairs.
    Llama,
    /// Gemma 3 (Gemma Team 2025): embedding × √d, per-head Q/K RMSNorm, norms after attention
    /// and FFN as well as before, GELU-tanh gated FFN, five sliding-window layers (local RoPE
    /// base 10,000) to one global layer.
    Gemma3,
    /// Qwen2 / Qwen2.5: Q, K and V biases.
    Qwen2,
    /// Qwen3: per-head Q/K RMSNorm, no biases.
    Qwen3,
}

impl Family {
    pub const ALL: [Family; 4] = [Self::Llama, Self::Gemma3, Self::Qwen2, Self::Qwen3];

    fn of(arch: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == arch)
    }

    /// `general.architecture`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Gemma3 => "gemma3",
            Self::Qwen2 => "qwen2",
            Self::Qwen3 => "qwen3",
        }
    }

    /// RoPE rotates `(x[i], x[i + n/2])` ("NEOX" in llama.cpp) rather than adjacent pairs: the
    /// llama converter permutes Q and K rows into adjacent pairs, the others' do not.
    pub fn rope_halves(self) -> bool {
        self != Self::Llama
    }

    /// GELU (tanh approximation, Hendrycks & Gimpel 2016) gates the FFN instead of SiLU.
    pub fn gelu(self) -> bool {
        self == Self::Gemma3
    }

    /// Q and K are RMS-normalised per head before RoPE.
    pub fn qk_norm(self) -> bool {
        matches!(self, Self::Gemma3 | Self::Qwen3)
    }

    /// The attention and FFN outputs are RMS-normalised before the residual add.
    pub fn post_norms(self) -> bool {
        self == Self::Gemma3
    }

    /// Q, K and V projections add a bias.
    pub fn qkv_bias(self) -> bool {
        self == Self::Qwen2
    }
}

/// Gemma 3: of every 6 layers the first 5 attend within the sliding window, the 6th to the
/// whole context (llama.cpp `set_swa_pattern(6)`).
const GEMMA3_SWA_PATTERN: usize = 6;
/// Gemma 3's RoPE base on its sliding-window layers (llama.cpp `rope_freq_base_train_swa`).
const GEMMA3_SWA_ROPE_BASE: f32 = 10_000.0;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlamaConfig {
    pub architecture: String,
    pub family: Family,
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
    /// Gemma 3: how many positions back a sliding-window layer attends (itself included).
    pub sliding_window: Option<usize>,
}

impl LlamaConfig {
    pub fn from_gguf<B: AsRef<[u8]>>(g: &Gguf<B>) -> Result<Self, ModelError> {
        let arch = g.get_str("general.architecture")?.to_string();
        let Some(family) = Family::of(&arch) else {
            return Err(ModelError::UnsupportedArchitecture(arch));
        };
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
        let explicit_head_dim = g.opt_u64(&key("attention.key_length"))?.is_some();
        if !explicit_head_dim && d_model % n_heads != 0 {
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
        let head_dim = match explicit_head_dim {
            true => usize_of("attention.key_length")?,
            false => d_model / n_heads,
        };
        if let Some(v) = g.opt_u64(&key("attention.value_length"))?
            && v as usize != head_dim
        {
            return Err(bad(
                &key("attention.value_length"),
                format!("{v} differs from key_length {head_dim}; tokscope needs them equal"),
            ));
        }
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
        let sliding_window = match (family, g.opt_u64(&key("attention.sliding_window"))?) {
            (Family::Gemma3, Some(w)) if w > 0 => Some(usize_of("attention.sliding_window")?),
            _ => None,
        };
        Ok(Self {
            architecture: arch,
            family,
            sliding_window,
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

    /// Whether layer `layer` attends only within the sliding window.
    pub fn is_sliding(&self, layer: usize) -> bool {
        self.sliding_window.is_some() && layer % GEMMA3_SWA_PATTERN < GEMMA3_SWA_PATTERN - 1
    }

    /// The RoPE base of layer `layer`: Gemma 3's sliding layers use a local base.
    pub fn rope_base(&self, layer: usize) -> f32 {
        if self.is_sliding(layer) {
            GEMMA3_SWA_ROPE_BASE
        } else {
            self.rope_freq_base
        }
    }

    /// The first position the query at `pos` attends to in layer `layer`: llama.cpp masks key
    /// `p0` from query `p1` when `p1 − p0 ≥ window` (`LLAMA_SWA_TYPE_STANDARD`).
    pub fn first_attended(&self, layer: usize, pos: usize) -> usize {
        match self.sliding_window {
            Some(w) if self.is_sliding(layer) => (pos + 1).saturating_sub(w),
            _ => 0,
        }
    }

    /// What attention multiplies Q·K by: `1/√head_dim`, except Gemma 3 27B (62 layers), which
    /// uses `1/√(d/heads)` (llama.cpp `f_attention_scale`, after gemma_pytorch's config.py).
    pub fn attn_scale(&self) -> f32 {
        let width = if self.family == Family::Gemma3 && self.n_layers == 62 {
            self.d_model / self.n_heads
        } else {
            self.head_dim
        };
        1.0 / (width as f32).sqrt()
    }

    /// What the token embedding is multiplied by: Gemma scales it by √d (computed in f32, as
    /// llama.cpp's `sqrtf(n_embd)`), the others not at all.
    pub fn embed_scale(&self) -> f32 {
        if self.family == Family::Gemma3 {
            (self.d_model as f32).sqrt()
        } else {
            1.0
        }
    }

    /// Width of the K and V projections: KV heads × head dimension (smaller than d under GQA).
    pub fn kv_dim(&self) -> usize {
        self.n_kv_heads * self.head_dim
    }

    /// Width of the Q projection and the attention output.
    pub fn q_dim(&self) -> usize {
        self.n_heads * self.head_dim
    }

    /// Bytes of K and V cache per token of context, over all layers, at `value_bytes` a value
    /// (the engines differ: `cpu::KV_VALUE_BYTES`, the GPU engine's `KV_VALUE_BYTES`).
    pub fn kv_bytes_per_token(&self, value_bytes: u64) -> u64 {
        2 * (self.n_layers * self.kv_dim()) as u64 * value_bytes
    }
}

fn bad(key: &str, reason: String) -> ModelError {
    ModelError::BadConfig {
        key: key.to_string(),
        reason,
    }
}

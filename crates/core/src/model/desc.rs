//! The one description of a llama-family model: which GGUF tensor plays which part, with its
//! format and shape, checked once. The CPU and GPU engines are two executors of this.
//!
//! Tensor names: llama.cpp's `LLM_TENSOR_NAMES` for `LLM_ARCH_LLAMA`, `_GEMMA3`, `_QWEN2` and
//! `_QWEN3` (src/llama-arch.cpp).

use super::{LlamaConfig, ModelError};
use crate::gguf::Gguf;
use crate::quant::GgmlType;
use serde::Serialize;
use std::ops::Range;

/// A weight matrix (or vector) in the file: `rows` × `cols`, row-major, `cols` contiguous.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Weight {
    pub name: String,
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    /// Absolute byte range in the GGUF buffer.
    #[serde(skip)]
    pub data: Range<usize>,
}

impl Weight {
    pub fn row_bytes(&self) -> usize {
        (self.data.end - self.data.start) / self.rows
    }

    pub fn n_bytes(&self) -> u64 {
        (self.data.end - self.data.start) as u64
    }

    pub fn n_params(&self) -> u64 {
        (self.rows * self.cols) as u64
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerDesc {
    pub attn_norm: Weight,
    pub wq: Weight,
    pub wk: Weight,
    pub wv: Weight,
    pub wo: Weight,
    pub ffn_norm: Weight,
    pub w_gate: Weight,
    pub w_up: Weight,
    pub w_down: Weight,
    /// Per-head RMSNorm gains of Q and K (gemma3, qwen3), `head_dim` each.
    pub q_norm: Option<Weight>,
    pub k_norm: Option<Weight>,
    /// RMSNorm gains applied to the attention and FFN outputs before the residual add (gemma3).
    pub post_attn_norm: Option<Weight>,
    pub post_ffn_norm: Option<Weight>,
    /// Q, K and V biases (qwen2).
    pub bq: Option<Weight>,
    pub bk: Option<Weight>,
    pub bv: Option<Weight>,
}

impl LayerDesc {
    /// The seven matrices every decoded token reads in full.
    pub fn matrices(&self) -> [&Weight; 7] {
        [
            &self.wq,
            &self.wk,
            &self.wv,
            &self.wo,
            &self.w_gate,
            &self.w_up,
            &self.w_down,
        ]
    }

    /// The small f32 vectors a token reads: norms' gains and biases.
    pub fn vectors(&self) -> Vec<&Weight> {
        let extra = [
            &self.q_norm,
            &self.k_norm,
            &self.post_attn_norm,
            &self.post_ffn_norm,
            &self.bq,
            &self.bk,
            &self.bv,
        ];
        [&self.attn_norm, &self.ffn_norm]
            .into_iter()
            .chain(extra.into_iter().flatten())
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelDesc {
    pub token_embd: Weight,
    pub layers: Vec<LayerDesc>,
    pub output_norm: Weight,
    /// The output head; the same tensor as `token_embd` when the model ties them.
    pub output: Weight,
    pub tied_output: bool,
    /// Llama 3.1-style per-frequency RoPE divisors (`rope_freqs.weight`), if present.
    pub rope_freqs: Option<Weight>,
}

impl ModelDesc {
    pub fn from_gguf<B: AsRef<[u8]>>(g: &Gguf<B>, c: &LlamaConfig) -> Result<Self, ModelError> {
        let (d, q, kv, ffn) = (c.d_model, c.q_dim(), c.kv_dim(), c.ffn_dim);
        let f = c.family;
        let token_embd = matrix(g, "token_embd.weight", c.vocab_size, d)?;
        // Not `with_capacity(n_layers)`: a file may claim millions of layers (block_count is
        // only bounded by 2^24) and hold none; the loop below stops at the first missing one.
        let mut layers = Vec::with_capacity(c.n_layers.min(g.tensors().len()));
        for i in 0..c.n_layers {
            let name = |part: &str| format!("blk.{i}.{part}.weight");
            let bias = |part: &str| format!("blk.{i}.{part}.bias");
            let when = |on: bool, name: String, len: usize| on.then(|| vector(g, &name, len)).transpose();
            layers.push(LayerDesc {
                attn_norm: vector(g, &name("attn_norm"), d)?,
                wq: matrix(g, &name("attn_q"), q, d)?,
                wk: matrix(g, &name("attn_k"), kv, d)?,
                wv: matrix(g, &name("attn_v"), kv, d)?,
                wo: matrix(g, &name("attn_output"), d, q)?,
                ffn_norm: vector(g, &name("ffn_norm"), d)?,
                w_gate: matrix(g, &name("ffn_gate"), ffn, d)?,
                w_up: matrix(g, &name("ffn_up"), ffn, d)?,
                w_down: matrix(g, &name("ffn_down"), d, ffn)?,
                q_norm: when(f.qk_norm(), name("attn_q_norm"), c.head_dim)?,
                k_norm: when(f.qk_norm(), name("attn_k_norm"), c.head_dim)?,
                post_attn_norm: when(f.post_norms(), name("post_attention_norm"), d)?,
                post_ffn_norm: when(f.post_norms(), name("post_ffw_norm"), d)?,
                bq: when(f.qkv_bias(), bias("attn_q"), q)?,
                bk: when(f.qkv_bias(), bias("attn_k"), kv)?,
                bv: when(f.qkv_bias(), bias("attn_v"), kv)?,
            });
        }
        let output_norm = vector(g, "output_norm.weight", d)?;
        let (output, tied_output) = match g.tensor("output.weight") {
            Some(_) => (matrix(g, "output.weight", c.vocab_size, d)?, false),
            None => (token_embd.clone(), true),
        };
        let rope_freqs = match g.tensor("rope_freqs.weight") {
            Some(_) => Some(vector(g, "rope_freqs.weight", c.rope_dim / 2)?),
            None => None,
        };
        Ok(Self {
            token_embd,
            layers,
            output_norm,
            output,
            tied_output,
            rope_freqs,
        })
    }

    /// Every distinct weight, in file order of use.
    pub fn weights(&self) -> Vec<&Weight> {
        let mut all = vec![&self.token_embd];
        for l in &self.layers {
            all.extend(l.matrices());
            all.extend(l.vectors());
        }
        all.push(&self.output_norm);
        if !self.tied_output {
            all.push(&self.output);
        }
        all.extend(self.rope_freqs.as_ref());
        all
    }

    /// Weight bytes read to decode one token: every layer's matrices and norms, the final norm
    /// and the whole output head, but only one row of the token embedding.
    pub fn weight_bytes_per_token(&self) -> u64 {
        let layers: u64 = self
            .layers
            .iter()
            .map(|l| {
                l.matrices()
                    .iter()
                    .chain(l.vectors().iter())
                    .map(|w| w.n_bytes())
                    .sum::<u64>()
            })
            .sum();
        let embd_row = self.token_embd.row_bytes() as u64;
        layers + embd_row + self.output_norm.n_bytes() + self.output.n_bytes()
    }

    /// Parameters that take part in one decoded token (the embedding lookup counts once, as
    /// part of a tied head, or not at all).
    pub fn matmul_params(&self) -> u64 {
        let layers: u64 = self
            .layers
            .iter()
            .map(|l| l.matrices().iter().map(|w| w.n_params()).sum::<u64>())
            .sum();
        layers + self.output.n_params()
    }
}

fn shape_of<B: AsRef<[u8]>>(g: &Gguf<B>, name: &str, expected: &[u64]) -> Result<Weight, ModelError> {
    let t = g.require_tensor(name)?;
    if t.dims != expected {
        return Err(ModelError::ShapeMismatch {
            tensor: name.to_string(),
            expected: expected.to_vec(),
            found: t.dims.clone(),
        });
    }
    if !t.ty.is_supported() {
        return Err(ModelError::UnsupportedType {
            tensor: name.to_string(),
            ty: t.ty,
        });
    }
    Ok(Weight {
        name: name.to_string(),
        ty: t.ty,
        rows: t.rows() as usize,
        cols: t.dims[0] as usize,
        data: t.data.clone(),
    })
}

fn matrix<B: AsRef<[u8]>>(g: &Gguf<B>, name: &str, rows: usize, cols: usize) -> Result<Weight, ModelError> {
    shape_of(g, name, &[cols as u64, rows as u64])
}

/// Norm weights and RoPE factors must be F32: they are read as plain floats.
fn vector<B: AsRef<[u8]>>(g: &Gguf<B>, name: &str, len: usize) -> Result<Weight, ModelError> {
    let w = shape_of(g, name, &[len as u64])?;
    if w.ty != GgmlType::F32 {
        return Err(ModelError::UnsupportedType {
            tensor: name.to_string(),
            ty: w.ty,
        });
    }
    Ok(w)
}

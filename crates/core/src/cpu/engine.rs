//! The CPU executor of a [`ModelDesc`](crate::model::ModelDesc): the reference every GPU kernel
//! is tested against and the engine of browsers without WebGPU.
//!
//! Activations are f32 (residual stream, norms, RoPE, attention, softmax); inputs to quantized
//! matrices are rounded to 8-bit blocks as ggml's CPU backend does. All buffers are sized at
//! construction, so decoding a token allocates nothing.

use super::attention::{AttentionShape, MAX_HEAD_DIM, attention};
use super::kv_cache::KvCache;
use super::matmul::matmul;
use super::ops::{
    add_in_place, apply_rope, apply_rope_halves, gelu_mul, rms_norm, rms_norm_each, rope_table, silu_mul,
};
use crate::model::{LayerDesc, Model};
use crate::quant::Acts;
use std::sync::Arc;
use thiserror::Error;

/// Prompt tokens processed per batched pass; bounds scratch memory (≈ 64 × ffn floats).
pub const PREFILL_CHUNK: usize = 64;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum EngineError {
    #[error(
        "context full: {needed} tokens needed, the context holds {capacity} (start a new conversation or raise --context)"
    )]
    ContextFull { needed: usize, capacity: usize },
    #[error("token id {token} is outside the vocabulary (0..{vocab})")]
    TokenOutOfRange { token: u32, vocab: usize },
    #[error("empty prompt: at least one token is needed")]
    EmptyPrompt,
    #[error("head dimension {0} exceeds the supported maximum {MAX_HEAD_DIM}")]
    HeadDimTooLarge(usize),
}

struct Scratch {
    x: Vec<f32>,
    xb: Acts,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    att: Acts,
    proj: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    hb: Acts,
    last: Acts,
    logits: Vec<f32>,
    tmp: Vec<f32>,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

/// Which sequence and position each row of a pass belongs to.
#[derive(Clone, Copy)]
enum Rows {
    /// Consecutive tokens of one sequence from `pos0` (prefill, or one decode step).
    Run { seq: usize, pos0: usize },
    /// Row `b` is the next token of sequence `b` (batched decode).
    Batch,
}

pub struct CpuEngine<B> {
    model: Arc<Model<B>>,
    /// One KV cache per sequence; sequence 0 is the one `prefill`/`decode` use.
    kv: Vec<KvCache>,
    /// Tokens in each sequence's cache.
    pos: Vec<usize>,
    vecs: Vec<LayerVecs>,
    output_norm: Vec<f32>,
    s: Scratch,
}

/// One layer's small vectors as f32 (norm gains, biases, RoPE frequencies), read once at load.
struct LayerVecs {
    attn_norm: Vec<f32>,
    ffn_norm: Vec<f32>,
    q_norm: Option<Vec<f32>>,
    k_norm: Option<Vec<f32>>,
    post_attn_norm: Option<Vec<f32>>,
    post_ffn_norm: Option<Vec<f32>>,
    bias: Option<[Vec<f32>; 3]>,
    inv_freq: Vec<f32>,
}

impl LayerVecs {
    fn new<B: AsRef<[u8]>>(model: &Model<B>, li: usize, l: &LayerDesc) -> Self {
        let f = |w: &Option<crate::model::Weight>| w.as_ref().map(|w| model.dequantized(w));
        Self {
            attn_norm: model.dequantized(&l.attn_norm),
            ffn_norm: model.dequantized(&l.ffn_norm),
            q_norm: f(&l.q_norm),
            k_norm: f(&l.k_norm),
            post_attn_norm: f(&l.post_attn_norm),
            post_ffn_norm: f(&l.post_ffn_norm),
            bias: match (f(&l.bq), f(&l.bk), f(&l.bv)) {
                (Some(q), Some(k), Some(v)) => Some([q, k, v]),
                _ => None,
            },
            inv_freq: model.rope_inv_freq(li),
        }
    }
}

impl<B: AsRef<[u8]>> CpuEngine<B> {
    /// An engine with room for `context` tokens (capped at the model's trained context).
    pub fn new(model: Arc<Model<B>>, context: usize) -> Result<Self, EngineError> {
        Self::with_sequences(model, context, 1)
    }

    /// An engine for `seqs` independent sequences of up to `context` tokens each, decoded
    /// together by [`decode_batch`](Self::decode_batch): one read of the weights per step for
    /// all of them, the lesson of batching.
    pub fn with_sequences(model: Arc<Model<B>>, context: usize, seqs: usize) -> Result<Self, EngineError> {
        let seqs = seqs.max(1);
        let c = &model.config;
        if c.head_dim > MAX_HEAD_DIM {
            return Err(EngineError::HeadDimTooLarge(c.head_dim));
        }
        let context = context.clamp(1, c.context_length);
        let n = PREFILL_CHUNK.max(seqs);
        let vecs = (model.desc.layers.iter().enumerate())
            .map(|(li, l)| LayerVecs::new(&model, li, l))
            .collect();
        let s = Scratch {
            x: vec![0.0; n * c.d_model],
            xb: Acts::new(n, c.d_model),
            q: vec![0.0; n * c.q_dim()],
            k: vec![0.0; n * c.kv_dim()],
            v: vec![0.0; n * c.kv_dim()],
            att: Acts::new(n, c.q_dim()),
            proj: vec![0.0; n * c.d_model],
            gate: vec![0.0; n * c.ffn_dim],
            up: vec![0.0; n * c.ffn_dim],
            hb: Acts::new(n, c.ffn_dim),
            last: Acts::new(seqs, c.d_model),
            logits: vec![0.0; seqs * c.vocab_size],
            tmp: Vec::with_capacity(n * c.ffn_dim.max(c.d_model)),
            cos: vec![0.0; c.rope_dim / 2],
            sin: vec![0.0; c.rope_dim / 2],
        };
        Ok(Self {
            kv: (0..seqs)
                .map(|_| KvCache::new(c.n_layers, context, c.kv_dim()))
                .collect(),
            pos: vec![0; seqs],
            output_norm: model.dequantized(&model.desc.output_norm),
            vecs,
            model,
            s,
        })
    }

    pub fn model(&self) -> &Arc<Model<B>> {
        &self.model
    }

    /// Tokens in the KV cache (the position of the next token).
    pub fn position(&self) -> usize {
        self.pos[0]
    }

    pub fn context_capacity(&self) -> usize {
        self.kv[0].capacity()
    }

    /// Sequences this engine holds.
    pub fn sequences(&self) -> usize {
        self.kv.len()
    }

    /// Forgets every conversation; the buffers stay allocated.
    pub fn reset(&mut self) {
        self.pos.iter_mut().for_each(|p| *p = 0);
    }

    /// Runs the prompt in batched chunks and returns the logits of its last token.
    pub fn prefill(&mut self, tokens: &[u32]) -> Result<&[f32], EngineError> {
        self.prefill_seq(0, tokens)
    }

    /// [`prefill`](Self::prefill) into sequence `seq`.
    pub fn prefill_seq(&mut self, seq: usize, tokens: &[u32]) -> Result<&[f32], EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        self.check(seq, tokens)?;
        let chunks: Vec<&[u32]> = tokens.chunks(PREFILL_CHUNK).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let rows = Rows::Run {
                seq,
                pos0: self.pos[seq],
            };
            self.forward(chunk, rows, i + 1 == chunks.len());
        }
        Ok(&self.s.logits[..self.model.config.vocab_size])
    }

    /// Runs part of a prompt without computing logits: [`prefill`](Self::prefill) in pieces
    /// of whole [`PREFILL_CHUNK`]s gives the same bits as in one call, and the browser's
    /// worker checks for Stop between pieces.
    pub fn feed(&mut self, tokens: &[u32]) -> Result<(), EngineError> {
        self.check(0, tokens)?;
        for chunk in tokens.chunks(PREFILL_CHUNK) {
            let rows = Rows::Run {
                seq: 0,
                pos0: self.pos[0],
            };
            self.forward(chunk, rows, false);
        }
        Ok(())
    }

    /// Appends one token and returns the logits for the next.
    pub fn decode(&mut self, token: u32) -> Result<&[f32], EngineError> {
        self.check(0, &[token])?;
        self.forward(
            &[token],
            Rows::Run {
                seq: 0,
                pos0: self.pos[0],
            },
            true,
        );
        Ok(&self.s.logits[..self.model.config.vocab_size])
    }

    /// Appends `tokens[b]` to sequence `b` for every sequence at once and returns the logits
    /// of each, `[b][vocab]`. The weights are read once for the whole batch.
    pub fn decode_batch(&mut self, tokens: &[u32]) -> Result<&[f32], EngineError> {
        assert_eq!(tokens.len(), self.kv.len(), "one token per sequence");
        for (b, t) in tokens.iter().enumerate() {
            self.check(b, std::slice::from_ref(t))?;
        }
        self.forward(tokens, Rows::Batch, true);
        Ok(&self.s.logits[..tokens.len() * self.model.config.vocab_size])
    }

    fn check(&self, seq: usize, tokens: &[u32]) -> Result<(), EngineError> {
        let vocab = self.model.config.vocab_size;
        if let Some(&token) = tokens.iter().find(|&&t| t as usize >= vocab) {
            return Err(EngineError::TokenOutOfRange { token, vocab });
        }
        let needed = self.pos[seq] + tokens.len();
        if needed > self.kv[seq].capacity() {
            return Err(EngineError::ContextFull {
                needed,
                capacity: self.kv[seq].capacity(),
            });
        }
        Ok(())
    }

    fn forward(&mut self, tokens: &[u32], rows: Rows, want_logits: bool) {
        let model = &*self.model;
        let c = &model.config;
        let bytes = model.gguf.bytes();
        let (n, d) = (tokens.len(), c.d_model);
        // Row t's sequence and position.
        let at = |t: usize| match rows {
            Rows::Run { seq, pos0 } => (seq, pos0 + t),
            Rows::Batch => (t, self.pos[t]),
        };
        let s = &mut self.s;
        for (t, &tok) in tokens.iter().enumerate() {
            model.embed(tok, &mut s.x[t * d..(t + 1) * d]);
        }
        for a in [&mut s.xb, &mut s.att, &mut s.hb] {
            a.set_n(n);
        }
        let shape = AttentionShape {
            n_heads: c.n_heads,
            n_kv_heads: c.n_kv_heads,
            head_dim: c.head_dim,
            scale: c.attn_scale(),
        };
        let rope = if c.family.rope_halves() {
            apply_rope_halves
        } else {
            apply_rope
        };
        let (qd, kvd, fd) = (c.q_dim(), c.kv_dim(), c.ffn_dim);
        for (li, layer) in model.desc.layers.iter().enumerate() {
            let v = &self.vecs[li];
            let first = |p: usize| c.first_attended(li, p);
            norm_rows(&s.x[..n * d], &v.attn_norm, c.rms_eps, &mut s.xb);
            matmul(&layer.wq, bytes, &s.xb, &mut s.q, &mut s.tmp);
            matmul(&layer.wk, bytes, &s.xb, &mut s.k, &mut s.tmp);
            matmul(&layer.wv, bytes, &s.xb, &mut s.v, &mut s.tmp);
            if let Some([bq, bk, bv]) = &v.bias {
                for (out, b) in [
                    (&mut s.q[..n * qd], bq),
                    (&mut s.k[..n * kvd], bk),
                    (&mut s.v[..n * kvd], bv),
                ] {
                    out.chunks_exact_mut(b.len()).for_each(|row| add_in_place(row, b));
                }
            }
            if let (Some(qn), Some(kn)) = (&v.q_norm, &v.k_norm) {
                rms_norm_each(&mut s.q[..n * qd], qn, c.rms_eps, &mut s.tmp);
                rms_norm_each(&mut s.k[..n * kvd], kn, c.rms_eps, &mut s.tmp);
            }
            for t in 0..n {
                rope_table(at(t).1, &v.inv_freq, &mut s.cos, &mut s.sin);
                rope(&mut s.q[t * qd..(t + 1) * qd], c.head_dim, &s.cos, &s.sin);
                rope(&mut s.k[t * kvd..(t + 1) * kvd], c.head_dim, &s.cos, &s.sin);
            }
            match rows {
                Rows::Run { seq, pos0 } => {
                    self.kv[seq].write(li, pos0, &s.k[..n * kvd], &s.v[..n * kvd]);
                    let (kc, vc) = self.kv[seq].layer(li, pos0 + n);
                    attention(&shape, &s.q[..n * qd], kc, vc, pos0, &first, s.att.x_mut());
                }
                Rows::Batch => {
                    for t in 0..n {
                        let pos = self.pos[t];
                        self.kv[t].write(li, pos, &s.k[t * kvd..(t + 1) * kvd], &s.v[t * kvd..(t + 1) * kvd]);
                        let (kc, vc) = self.kv[t].layer(li, pos + 1);
                        attention(
                            &shape,
                            &s.q[t * qd..(t + 1) * qd],
                            kc,
                            vc,
                            pos,
                            &first,
                            &mut s.att.x_mut()[t * qd..(t + 1) * qd],
                        );
                    }
                }
            }
            s.att.quantize();
            matmul(&layer.wo, bytes, &s.att, &mut s.proj, &mut s.tmp);
            if let Some(w) = &v.post_attn_norm {
                rms_norm_each(&mut s.proj[..n * d], w, c.rms_eps, &mut s.tmp);
            }
            add_in_place(&mut s.x[..n * d], &s.proj[..n * d]);

            norm_rows(&s.x[..n * d], &v.ffn_norm, c.rms_eps, &mut s.xb);
            matmul(&layer.w_gate, bytes, &s.xb, &mut s.gate, &mut s.tmp);
            matmul(&layer.w_up, bytes, &s.xb, &mut s.up, &mut s.tmp);
            if c.family.gelu() {
                gelu_mul(&mut s.gate[..n * fd], &s.up[..n * fd]);
            } else {
                silu_mul(&mut s.gate[..n * fd], &s.up[..n * fd]);
            }
            s.hb.x_mut().copy_from_slice(&s.gate[..n * fd]);
            s.hb.quantize();
            matmul(&layer.w_down, bytes, &s.hb, &mut s.proj, &mut s.tmp);
            if let Some(w) = &v.post_ffn_norm {
                rms_norm_each(&mut s.proj[..n * d], w, c.rms_eps, &mut s.tmp);
            }
            add_in_place(&mut s.x[..n * d], &s.proj[..n * d]);
        }
        // Logits of the last row for a run; of every row (one per sequence) for a batch.
        let logit_rows = match rows {
            Rows::Run { seq, .. } => {
                self.pos[seq] += n;
                (n - 1)..n
            }
            Rows::Batch => {
                self.pos.iter_mut().for_each(|p| *p += 1);
                0..n
            }
        };
        if want_logits {
            s.last.set_n(logit_rows.len());
            norm_rows(
                &s.x[logit_rows.start * d..logit_rows.end * d],
                &self.output_norm,
                c.rms_eps,
                &mut s.last,
            );
            matmul(&model.desc.output, bytes, &s.last, &mut s.logits, &mut s.tmp);
        }
    }
}

/// RMSNorm of each row of `x` into `out`, then 8-bit quantization for the next matmul.
fn norm_rows(x: &[f32], weight: &[f32], eps: f32, out: &mut Acts) {
    let d = weight.len();
    for (row, o) in x.chunks_exact(d).zip(out.x_mut().chunks_exact_mut(d)) {
        rms_norm(row, weight, eps, o);
    }
    out.quantize();
}

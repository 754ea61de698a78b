//! The engine's third part: the state of the B sequences one engine decodes together — their
//! KV cache, the activations and scratch a pass writes, the RoPE tables and the step uniform a
//! token fills in, the logits and top-k candidates, and the staging buffer results come back
//! through. Made per engine; the weights it runs over are shared (weights.rs).

use crate::matvec::{MAX_COLUMNS, Shares, Step};
use crate::readback::Staging;
use crate::top_k::{MAX_TOP_K, TOP_K_CHUNK};
use crate::{GpuContext, GpuError};
use std::collections::VecDeque;
use tokscope_core::model::Model;
use tokscope_core::roofline::chain::MAX_CHAIN;

/// Bytes a cached K or V value takes on the GPU: f16 (half.wgsl), as llama.cpp's default cache.
pub const KV_VALUE_BYTES: u64 = 2;

/// The most sequences one engine decodes together ([`crate::engine::GpuEngine::with_sequences`]).
pub const MAX_SEQUENCES: usize = 16;

/// Attention's most workgroups per (column, head). Each takes an equal share of the cache; a
/// pass uses one per `per_share` positions of its longest column, up to this many.
/// GPUs need workgroups to fill their many cores at batch 1 (a head per workgroup keeps 9 of an
/// H200's 132 multiprocessors busy for SmolLM2); on CPU adapters the heads already outnumber
/// the threads.
fn max_splits(device_type: wgpu::DeviceType, capacity: usize, per_share: usize) -> usize {
    let cap = match device_type {
        wgpu::DeviceType::Cpu => 4,
        _ => 32,
    };
    capacity.div_ceil(per_share).clamp(1, cap)
}

/// Bytes of one step's result: its top candidate (logit, token).
pub const CHAIN_RESULT_BYTES: usize = 8;

/// A chunk submitted and not yet read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chunk {
    /// Sequence 0's position before its first step.
    pub start: usize,
    pub steps: usize,
    pub staging: usize,
}

/// The chunks in flight, oldest first.
#[derive(Debug, Default)]
pub struct InFlight {
    pub(crate) chunks: VecDeque<Chunk>,
    pub(crate) next_staging: usize,
}

impl InFlight {
    pub fn clear(&mut self) {
        self.chunks.clear();
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}

/// What the graph's kernels need the sequences' buffers to hold (graph.rs's `Kernels::needs`).
#[derive(Clone, Copy)]
pub(crate) struct Needs {
    /// ops.wgsl's workgroup size: one attention share per this many positions.
    pub ops_wg: usize,
    /// The separate Q/K/V step runs (its `qkv` buffer).
    pub qkv_post: bool,
    /// Gemma 3's post-norm adds run (the `proj` buffer).
    pub norm_add: bool,
}

/// A buffer that only copies read from and write to.
fn copied(ctx: &GpuContext, label: &str, bytes: usize) -> wgpu::Buffer {
    ctx.buffer(
        label,
        bytes as u64,
        wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    )
}

fn storage(ctx: &GpuContext, label: &str, floats: usize) -> wgpu::Buffer {
    ctx.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (floats.max(4) * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

pub(crate) struct Sequences {
    /// Tokens each sequence's cache holds.
    pub capacity: usize,
    /// Attention's most shares per (column, head).
    pub max_splits: usize,
    pub shares: Shares,
    /// Values one layer's cache region holds (every sequence's rows).
    pub layer_floats: usize,
    /// Each distinct RoPE table's frequencies (one per base: Gemma 3 has two), and each
    /// layer's table.
    pub inv_freqs: Vec<Vec<f32>>,
    pub layer_table: Vec<usize>,
    pub x: wgpu::Buffer,
    pub q: wgpu::Buffer,
    pub att: wgpu::Buffer,
    pub scratch: wgpu::Buffer,
    pub h: wgpu::Buffer,
    pub logits: wgpu::Buffer,
    pub candidates: wgpu::Buffer,
    pub top_k_parts: wgpu::Buffer,
    pub kc: wgpu::Buffer,
    pub vc: wgpu::Buffer,
    pub rope: wgpu::Buffer,
    pub qkv: wgpu::Buffer,
    pub proj: wgpu::Buffer,
    pub step: wgpu::Buffer,
    pub staging: Staging,
    /// Each column's token, for the embedding lookup on the GPU (embed.rs).
    pub tokens: wgpu::Buffer,
    /// A chain's steps (chain.rs): each one's step uniform and RoPE rows, copied into `step`
    /// and `rope` before it; each one's candidate; and two staging buffers, so one chunk's
    /// read-back overlaps the next chunk's work.
    pub chain_steps: wgpu::Buffer,
    pub chain_rope: wgpu::Buffer,
    pub chain_out: wgpu::Buffer,
    pub chain_staging: [Staging; 2],
}

impl Sequences {
    /// Room for `seqs` sequences of `capacity` tokens of `model`, for the passes `kernels` run.
    pub fn new<B: AsRef<[u8]>>(
        ctx: &GpuContext,
        model: &Model<B>,
        kernels: Needs,
        capacity: usize,
        seqs: usize,
    ) -> Result<Self, GpuError> {
        let c = &model.config;
        let (d, qd, kvd, fd) = (c.d_model, c.q_dim(), c.kv_dim(), c.ffn_dim);
        let n = MAX_COLUMNS;
        let splits = max_splits(ctx.kind, capacity, kernels.ops_wg);
        // Attention's shares: per column, head and split, head_dim outputs, then a (max, sum)
        // vec4 each.
        let records = n * c.n_heads * splits;
        let shares = Shares {
            head_dim: c.head_dim,
            max_splits: splits,
            ml_at: records * c.head_dim / 4,
        };
        ctx.check_binding("attention shares", (records * (c.head_dim + 4) * 4) as u64)?;
        ctx.check_binding("attention scores", (n * c.n_heads * capacity * 4) as u64)?;
        ctx.check_binding("logits", (seqs * c.vocab_size * 4) as u64)?;
        // One region per layer, each holding every sequence's `capacity` rows, of f16 pairs:
        // offsets count values (even, since head_dim is), a word holds two.
        let layer_floats = seqs * capacity * kvd;
        let cache_floats = c.n_layers * layer_floats;
        ctx.check_binding("KV cache", cache_floats as u64 * KV_VALUE_BYTES)?;
        // One RoPE table per distinct set of frequencies (Gemma 3: local and global layers).
        let mut inv_freqs: Vec<Vec<f32>> = Vec::new();
        let layer_table: Vec<usize> = (0..c.n_layers)
            .map(|li| {
                let f = model.rope_inv_freq(li);
                inv_freqs.iter().position(|g| *g == f).unwrap_or_else(|| {
                    inv_freqs.push(f);
                    inv_freqs.len() - 1
                })
            })
            .collect();
        let top_k_chunks = c.vocab_size.div_ceil(TOP_K_CHUNK);
        Ok(Self {
            capacity,
            max_splits: splits,
            shares,
            layer_floats,
            x: storage(ctx, "x", n * d),
            q: storage(ctx, "q", n * qd),
            att: storage(ctx, "attention shares", records * (c.head_dim + 4)),
            scratch: storage(ctx, "attention scores", n * c.n_heads * capacity),
            h: storage(ctx, "swiglu", n * fd),
            logits: storage(ctx, "logits", seqs * c.vocab_size),
            candidates: storage(ctx, "top-k", seqs * 2 * MAX_TOP_K),
            top_k_parts: storage(
                ctx,
                "top-k chunks",
                if top_k_chunks > 1 {
                    seqs * top_k_chunks * 2 * MAX_TOP_K
                } else {
                    1
                },
            ),
            kc: storage(ctx, "K cache", cache_floats / 2),
            vc: storage(ctx, "V cache", cache_floats / 2),
            rope: storage(ctx, "rope cos/sin", inv_freqs.len() * n * c.head_dim),
            qkv: storage(ctx, "qkv", if kernels.qkv_post { n * (qd + 2 * kvd) } else { 1 }),
            proj: storage(ctx, "projection", if kernels.norm_add { n * d } else { 1 }),
            step: ctx.create_buffer(&wgpu::BufferDescriptor {
                label: Some("step"),
                size: std::mem::size_of::<Step>() as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            staging: Staging::new(ctx, (seqs * (c.vocab_size * 4).max(MAX_TOP_K * 8)) as u64),
            tokens: storage(ctx, "tokens", n),
            chain_steps: copied(ctx, "chain steps", MAX_CHAIN * std::mem::size_of::<Step>()),
            chain_rope: copied(ctx, "chain rope", MAX_CHAIN * inv_freqs.len() * c.head_dim * 4),
            chain_out: copied(ctx, "chain tokens", MAX_CHAIN * CHAIN_RESULT_BYTES),
            chain_staging: [0, 1].map(|_| Staging::new(ctx, (MAX_CHAIN * CHAIN_RESULT_BYTES) as u64)),
            inv_freqs,
            layer_table,
        })
    }
}

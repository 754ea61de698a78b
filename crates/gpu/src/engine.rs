//! The GPU executor of a [`ModelDesc`](tokscope_core::model::ModelDesc), decoding one token per
//! submit: every pipeline, buffer and bind group is made at load; a token writes its embedding
//! row, RoPE table and step uniform (a few KB), records one compute pass and submits it once,
//! with the copy of its result (the top-k candidates: 8 bytes when greedy) in the same submit.
//!
//! A pass computes up to [`MAX_COLUMNS`] tokens (columns) with the same dispatches: a prefill
//! chunk of one sequence (its attention causal, column by column), or one token of each of up
//! to [`MAX_SEQUENCES`] sequences (batched decode: the weights read once for all of them). Each
//! column carries its own cache row, position and rotation in the step uniform.
//!
//! Five dispatches per layer, each a fused kernel:
//! 1. RMSNorm → Q·K·V (one stacked matrix) → RoPE on Q and K, K and V into the cache;
//! 2. attention of the one query over the cache, split across workgroups (flash-decoding);
//! 3. the attention shares combined, the output projection, added into the residual stream;
//! 4. RMSNorm → gate·up (rows interleaved) → SwiGLU;
//! 5. down projection, added into the residual stream;
//!
//! then RMSNorm → output head, and top-k of the logits: 5 × layers + 2 (an output head larger
//! than one binding takes one dispatch per row slice).

use crate::fused::fuse;
use crate::matvec::{Epilogue, GpuMatrix, MAX_COLUMNS, MatvecCall, MatvecIo, MatvecKernels, Shares, Step, row_slices};
use crate::readback::Staging;
use crate::repack::repack;
use crate::{GpuContext, GpuError};
use std::sync::Arc;
use tokscope_core::cpu::EngineError;
use tokscope_core::cpu::ops::rope_table;
use tokscope_core::model::{Family, Model, Weight};
use tokscope_core::quant::GgmlType;

pub const OPS_SHADER: &str = crate::wgsl!("ops.wgsl");

/// ops.wgsl as compiled: after half.wgsl (the KV cache's f16 packing).
pub fn ops_source() -> String {
    format!("{}{OPS_SHADER}", crate::matvec::HALF)
}

/// Bytes a cached K or V value takes on the GPU: f16 (half.wgsl), as llama.cpp's default cache.
pub const KV_VALUE_BYTES: u64 = 2;
/// The most candidates the top-k kernel returns; samplers wanting more read every logit.
pub const MAX_TOP_K: usize = 64;

/// Logits per top-k workgroup in its first stage (ops.wgsl's `TOP_K_CHUNK`): a vocabulary of
/// more than one chunk takes a workgroup per chunk, then one to merge their candidates, so no
/// workgroup scans a large vocabulary alone (Gemma 3's 262,144 logits: 64 workgroups). On
/// lavapipe the two stages decode as fast as the one workgroup did (Gemma with top-k 40 at
/// chunks of 4,096, 32,768 or the whole vocabulary: 7.0–8.5 tok/s each, within its noise).
const TOP_K_CHUNK: usize = 4096;

/// The most sequences one engine decodes together ([`GpuEngine::with_sequences`]).
pub const MAX_SEQUENCES: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum GpuEngineError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Batch(String),
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Shape {
    d: u32,
    eps: f32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_splits: u32,
    cache_at: u32,
    capacity: u32,
    ml_at: u32,
    window: u32,
    scale: f32,
    flags: u32,
    rope_at: u32,
    _pad: [u32; 3],
}

/// ops.wgsl `MAX_HD`: the widest head `qkv_post` holds in workgroup memory.
const MAX_QKV_HEAD_DIM: usize = 256;

/// ops.wgsl `qkv_post`'s flags.
const QKV_BIAS: u32 = 1;
const QKV_NORM: u32 = 2;
const ROPE_HALVES: u32 = 4;

/// What a dispatch computes, for the time split per kernel class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelClass {
    /// The layers' matrix products with their fused norms and epilogues, one class per role,
    /// so a fusion's cost can be weighed against the dispatch it would save: RMSNorm → Q, K, V
    /// (→ RoPE, KV write);
    Qkv,
    /// attention's shares combined → output projection → + residual;
    AttnOutput,
    /// RMSNorm → gate and up → SwiGLU or GeGLU;
    GateUp,
    /// down projection → + residual.
    Down,
    Attention,
    /// RMSNorm → output head.
    Head,
    /// The top-k of the logits.
    TopK,
    /// Per-head Q/K norms with RoPE, post-norm residual adds (families other than llama).
    Norms,
}

impl KernelClass {
    /// Its name in `bench`'s table and in its JSON (one list for both).
    pub fn label(self) -> &'static str {
        match self {
            KernelClass::Qkv => "qkv",
            KernelClass::AttnOutput => "attn_output",
            KernelClass::GateUp => "gate_up",
            KernelClass::Down => "down",
            KernelClass::Attention => "attention",
            KernelClass::Head => "head",
            KernelClass::TopK => "top_k",
            KernelClass::Norms => "norms",
        }
    }
}

impl serde::Serialize for KernelClass {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

/// One kernel class's share of a profiled token.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ClassTime {
    pub class: KernelClass,
    pub dispatches: usize,
    /// Seconds its kernels ran (GPU timestamps at each dispatch's ends), or with
    /// `timestamps: false`, seconds from submit to done per dispatch, launch included.
    pub seconds: f64,
}

/// Where a token's time goes, per kernel class ([`GpuEngine::profile`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Profile {
    pub classes: Vec<ClassTime>,
    /// Whether the times are GPU timestamps (kernel run time alone).
    pub timestamps: bool,
}

impl Profile {
    pub fn seconds(&self) -> f64 {
        self.classes.iter().map(|c| c.seconds).sum()
    }
}

enum Dispatch {
    Matvec(
        MatvecCall,
        #[cfg_attr(
            target_arch = "wasm32",
            expect(dead_code, reason = "only `profile` (native) reads it")
        )]
        KernelClass,
    ),
    Attention(wgpu::BindGroup, u32),
    TopK(wgpu::BindGroup),
    /// Top-k's first stage: (bindings, chunks).
    TopKChunks(wgpu::BindGroup, u32),
    /// The non-llama families' Q/K/V step (bias, head norms, RoPE, KV write), per head slot.
    QkvPost(wgpu::BindGroup, u32),
    /// A post-norm residual add (gemma3), per column.
    NormAdd(wgpu::BindGroup),
}

/// A pass's column counts: all of them (the layers) and the head's (from `Step::head_from`),
/// and attention's workgroups per (column, head).
#[derive(Clone, Copy)]
struct Columns {
    n: usize,
    head: usize,
    splits: u32,
}

// Only `profile` (native) asks.
#[cfg(not(target_arch = "wasm32"))]
impl Dispatch {
    fn class(&self) -> KernelClass {
        match self {
            Dispatch::Matvec(_, class) => *class,
            Dispatch::Attention(..) => KernelClass::Attention,
            Dispatch::TopK(_) | Dispatch::TopKChunks(..) => KernelClass::TopK,
            Dispatch::QkvPost(..) | Dispatch::NormAdd(_) => KernelClass::Norms,
        }
    }
}

/// What a submitted token leaves to read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// The `k` (1 ≤ k ≤ [`MAX_TOP_K`]) highest logits with their tokens.
    Top(usize),
    /// Every logit.
    Logits,
}

pub struct GpuEngine<B> {
    model: Arc<Model<B>>,
    pub ctx: Arc<GpuContext>,
    matvec: MatvecKernels,
    attention: wgpu::ComputePipeline,
    top_k: wgpu::ComputePipeline,
    /// Top-k's first stage, a workgroup per chunk of the vocabulary (when it has several).
    top_k_chunks: Option<wgpu::ComputePipeline>,
    dispatches: Vec<Dispatch>,
    /// The layers' dispatches (the rest: the head's slices and top-k).
    layer_dispatches: usize,
    x: wgpu::Buffer,
    logits: wgpu::Buffer,
    candidates: wgpu::Buffer,
    rope: wgpu::Buffer,
    step: wgpu::Buffer,
    staging: Staging,
    /// What the last submit leaves to read back: per column, for this many columns.
    pending: Option<(Want, usize)>,
    read_buf: Vec<u8>,
    /// Each distinct RoPE table's frequencies (one per base: Gemma 3 has two).
    inv_freqs: Vec<Vec<f32>>,
    qkv_post: Option<wgpu::ComputePipeline>,
    norm_add: Option<wgpu::ComputePipeline>,
    capacity: usize,
    /// Attention's most shares per (column, head): [`max_splits`].
    max_splits: usize,
    /// ops.wgsl's workgroup size: a pass takes one attention share per this many positions.
    ops_wg: usize,
    /// Tokens in each sequence's cache.
    pos: Vec<usize>,
    /// The pass's embedding rows and rotations, column after column.
    embed_rows: Vec<f32>,
    cos_sin: Vec<f32>,
}

/// ops.wgsl's workgroup size on this kind of adapter (see its `WG`).
fn ops_workgroup(device_type: wgpu::DeviceType) -> u32 {
    match device_type {
        wgpu::DeviceType::Cpu => 64,
        _ => 256,
    }
}

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

fn storage(ctx: &GpuContext, label: &str, floats: usize) -> wgpu::Buffer {
    ctx.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (floats.max(4) * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

impl<B: AsRef<[u8]>> GpuEngine<B> {
    /// Uploads the model (repacking every matrix once) with room for `context` tokens.
    /// `progress(done, total)` is called with weight bytes uploaded.
    pub fn new(
        ctx: Arc<GpuContext>,
        model: Arc<Model<B>>,
        context: usize,
        progress: impl FnMut(u64, u64),
    ) -> Result<Self, GpuEngineError> {
        Self::with_sequences(ctx, model, context, 1, progress)
    }

    /// [`GpuEngine::new`] for `seqs` (1 ≤ seqs ≤ [`MAX_SEQUENCES`]) independent sequences of up
    /// to `context` tokens each, decoded together by [`GpuEngine::submit_batch`]: one read of
    /// the weights per step for all of them.
    pub fn with_sequences(
        ctx: Arc<GpuContext>,
        model: Arc<Model<B>>,
        context: usize,
        seqs: usize,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<Self, GpuEngineError> {
        if !(1..=MAX_SEQUENCES).contains(&seqs) {
            return Err(GpuEngineError::Batch(format!(
                "{seqs} sequences: the GPU engine decodes 1 to {MAX_SEQUENCES} together"
            )));
        }
        let c = &model.config;
        if c.rope_dim != c.head_dim {
            return Err(GpuEngineError::Unsupported(format!(
                "partial RoPE ({} of {} dims) is not implemented on the GPU yet",
                c.rope_dim, c.head_dim
            )));
        }
        let capacity = context.clamp(1, c.context_length);
        let dev = &ctx.device;
        let module = ctx.shader("ops.wgsl", &ops_source());
        let ops_wg = ops_workgroup(ctx.info.device_type) as usize;
        let ops_workgroup = [("WG", ops_wg as f64)];
        let attention = ctx.pipeline_with(&module, "attention", &ops_workgroup);
        let top_k_chunks = c.vocab_size.div_ceil(TOP_K_CHUNK);
        let top_k_stage = |stage: u32| {
            let constants = [
                ("WG", ops_wg as f64),
                ("TOP_K_STAGE", stage as f64),
                ("TOP_K_CHUNK", TOP_K_CHUNK as f64),
                ("TOP_K_MAX", MAX_TOP_K as f64),
            ];
            ctx.pipeline_with(&module, "top_k", &constants)
        };
        let (top_k, top_k_first) = match top_k_chunks {
            1 => (top_k_stage(0), None),
            _ => (top_k_stage(2), Some(top_k_stage(1))),
        };
        // The llama family's Q/K/V step is matvec's fused RoPE epilogue; the others need a
        // whole head (its norm) or pair across it (RoPE on halves): a step of their own.
        // So do Q, K and V of different types (Q4_K_M gives V more bits): one matrix cannot hold
        // them without re-encoding, so they run as three products into one buffer.
        let family = c.family;
        let one_type = |l: &tokscope_core::model::LayerDesc| l.wq.ty == l.wk.ty && l.wk.ty == l.wv.ty;
        let fused_rope = family == Family::Llama && model.desc.layers.iter().all(one_type);
        if !fused_rope && c.head_dim > MAX_QKV_HEAD_DIM {
            return Err(GpuEngineError::Unsupported(format!(
                "a head dimension of {} (the Q/K/V step holds heads of up to {MAX_QKV_HEAD_DIM})",
                c.head_dim
            )));
        }
        let qkv_post = (!fused_rope).then(|| ctx.pipeline_with(&module, "qkv_post", &ops_workgroup));
        let norm_add = family
            .post_norms()
            .then(|| ctx.pipeline_with(&module, "norm_add", &ops_workgroup));
        let mut matvec = MatvecKernels::new(&ctx);
        let (d, qd, kvd, fd) = (c.d_model, c.q_dim(), c.kv_dim(), c.ffn_dim);
        let n = MAX_COLUMNS;
        let x = storage(&ctx, "x", n * d);
        let q = storage(&ctx, "q", n * qd);
        if !c.head_dim.is_multiple_of(4) {
            return Err(GpuEngineError::Unsupported(format!(
                "a head dimension of {} (the GPU kernels take multiples of 4)",
                c.head_dim
            )));
        }
        let splits = max_splits(ctx.info.device_type, capacity, ops_wg);
        // Attention's shares: per column, head and split, head_dim outputs, then a (max, sum)
        // vec4 each.
        let records = n * c.n_heads * splits;
        let shares = Shares {
            head_dim: c.head_dim,
            max_splits: splits,
            ml_at: records * c.head_dim / 4,
        };
        ctx.check_binding("attention shares", (records * (c.head_dim + 4) * 4) as u64)?;
        let att = storage(&ctx, "attention shares", records * (c.head_dim + 4));
        ctx.check_binding("attention scores", (n * c.n_heads * capacity * 4) as u64)?;
        let scratch = storage(&ctx, "attention scores", n * c.n_heads * capacity);
        let h = storage(&ctx, "swiglu", n * fd);
        ctx.check_binding("logits", (seqs * c.vocab_size * 4) as u64)?;
        let logits = storage(&ctx, "logits", seqs * c.vocab_size);
        let candidates = storage(&ctx, "top-k", seqs * 2 * MAX_TOP_K);
        let top_k_parts = storage(
            &ctx,
            "top-k chunks",
            top_k_first.as_ref().map_or(1, |_| seqs * top_k_chunks * 2 * MAX_TOP_K),
        );
        // One region per layer, each holding every sequence's `capacity` rows, of f16 pairs:
        // offsets count values (even, since head_dim is), a word holds two.
        let layer_floats = seqs * capacity * kvd;
        let cache_floats = c.n_layers * layer_floats;
        ctx.check_binding("KV cache", cache_floats as u64 * KV_VALUE_BYTES)?;
        let kc = storage(&ctx, "K cache", cache_floats / 2);
        let vc = storage(&ctx, "V cache", cache_floats / 2);
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
        let rope = storage(&ctx, "rope cos/sin", inv_freqs.len() * n * c.head_dim);
        let qkv = storage(&ctx, "qkv", if fused_rope { 1 } else { n * (qd + 2 * kvd) });
        let proj = storage(&ctx, "projection", if norm_add.is_some() { n * d } else { 1 });
        let step = ctx.create_buffer(&wgpu::BufferDescriptor {
            label: Some("step"),
            size: std::mem::size_of::<Step>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let total: u64 = model.desc.weights().iter().map(|w| w.n_bytes()).sum();
        let mut done = 0u64;
        let group = matvec.shape().rows as usize;
        // Repacks rows `rows` of a (fused) matrix and uploads them, counting their bytes done.
        let mut put = |name: &str, ty: GgmlType, cols: usize, bytes: &[u8], rows: std::ops::Range<usize>| {
            let row_bytes = ty.bytes_for(cols as u64).expect("whole blocks") as usize;
            let part = &bytes[rows.start * row_bytes..rows.end * row_bytes];
            let packed = repack(ty, rows.len(), cols, part, group).map_err(GpuError::from)?;
            let m = GpuMatrix::upload(&ctx, name, &packed)?;
            done += part.len() as u64;
            progress(done.min(total), total);
            Ok::<_, GpuEngineError>(m)
        };
        let mut upload = |name: &str, parts: &[&Weight], interleave: bool| -> Result<GpuMatrix, GpuEngineError> {
            let (ty, bytes) = fuse(&model, parts, interleave);
            let rows = parts.iter().map(|w| w.rows).sum();
            put(name, ty, parts[0].cols, &bytes, 0..rows)
        };
        let shape_buf = |cache_at: usize, rows: usize, layer: Option<usize>| {
            let window = layer.filter(|&li| c.is_sliding(li)).and(c.sliding_window).unwrap_or(0);
            let flags = (family.qkv_bias() as u32 * QKV_BIAS)
                | (family.qk_norm() as u32 * QKV_NORM)
                | (family.rope_halves() as u32 * ROPE_HALVES);
            let s = Shape {
                d: rows as u32,
                eps: c.rms_eps,
                n_heads: c.n_heads as u32,
                n_kv_heads: c.n_kv_heads as u32,
                head_dim: c.head_dim as u32,
                max_splits: splits as u32,
                cache_at: cache_at as u32,
                capacity: capacity as u32,
                ml_at: shares.ml_at as u32,
                window: window as u32,
                scale: c.attn_scale(),
                flags,
                rope_at: (layer.map_or(0, |li| layer_table[li]) * n * c.head_dim) as u32,
                _pad: [0; 3],
            };
            ctx.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("shape"),
                contents: bytemuck::bytes_of(&s),
                usage: wgpu::BufferUsages::UNIFORM,
            })
        };
        let table = |data: &[f32]| {
            ctx.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("norm weight"),
                contents: bytemuck::cast_slice(data),
                usage: wgpu::BufferUsages::STORAGE,
            })
        };
        let bind = |p: &wgpu::ComputePipeline, entries: &[(u32, &wgpu::Buffer)]| {
            let entries: Vec<wgpu::BindGroupEntry> = entries
                .iter()
                .map(|(binding, buf)| wgpu::BindGroupEntry {
                    binding: *binding,
                    resource: buf.as_entire_binding(),
                })
                .collect();
            dev.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &p.get_bind_group_layout(0),
                entries: &entries,
            })
        };
        let eps = c.rms_eps;
        fn io<'a>(
            x: &'a wgpu::Buffer,
            y: &'a wgpu::Buffer,
            norm: Option<(&'a wgpu::Buffer, f32)>,
            epilogue: Epilogue<'a>,
            step: &'a wgpu::Buffer,
        ) -> MatvecIo<'a> {
            MatvecIo {
                x,
                y,
                norm,
                epilogue,
                step,
                head: false,
                combine: None,
                out_rows: None,
            }
        }
        let mut mv = |m: &GpuMatrix, io: MatvecIo<'_>, class| Dispatch::Matvec(matvec.bind(&ctx, m, io), class);
        let mut dispatches = Vec::new();
        for (li, l) in model.desc.layers.iter().enumerate() {
            let cache_at = li * layer_floats;
            let attn_norm = table(&model.dequantized(&l.attn_norm));
            let ffn_norm = table(&model.dequantized(&l.ffn_norm));
            // Q, K and V stacked into one matrix where they share a type, else one each.
            let wqkv = match one_type(l) {
                true => vec![upload(&format!("blk.{li}.attn_qkv"), &[&l.wq, &l.wk, &l.wv], false)?],
                false => vec![
                    upload(&l.wq.name, &[&l.wq], false)?,
                    upload(&l.wk.name, &[&l.wk], false)?,
                    upload(&l.wv.name, &[&l.wv], false)?,
                ],
            };
            let wo = upload(&l.wo.name, &[&l.wo], false)?;
            let wgu = upload(&format!("blk.{li}.ffn_gate_up"), &[&l.w_gate, &l.w_up], true)?;
            let wd = upload(&l.w_down.name, &[&l.w_down], false)?;
            let shape = shape_buf(cache_at, d, Some(li));
            if let Some(post) = &qkv_post {
                // Q/K/V stored as they come, then bias, head norms, RoPE and the KV write.
                let mut at = 0;
                for m in &wqkv {
                    let into = MatvecIo {
                        out_rows: Some((at, qd + 2 * kvd)),
                        ..io(&x, &qkv, Some((&attn_norm, eps)), Epilogue::Store, &step)
                    };
                    dispatches.push(mv(m, into, KernelClass::Qkv));
                    at += m.rows;
                }
                let vec_of = |w: &Option<Weight>| w.as_ref().map(|w| model.dequantized(w)).unwrap_or_default();
                let mut g = vec_of(&l.q_norm);
                g.extend(vec_of(&l.k_norm));
                let mut b = vec_of(&l.bq);
                b.extend(vec_of(&l.bk));
                b.extend(vec_of(&l.bv));
                // wgpu refuses empty bindings: a placeholder where the family has none.
                let (g, b) = (
                    table(if g.is_empty() { &[0.0] } else { &g }),
                    table(if b.is_empty() { &[0.0] } else { &b }),
                );
                let post_bind = bind(
                    post,
                    &[
                        (0, &qkv),
                        (2, &q),
                        (3, &kc),
                        (4, &vc),
                        (5, &shape),
                        (6, &step),
                        (10, &g),
                        (11, &b),
                        (12, &rope),
                    ],
                );
                dispatches.push(Dispatch::QkvPost(post_bind, (c.n_heads + 2 * c.n_kv_heads) as u32));
            } else {
                let rope_kv = Epilogue::RopeKv {
                    q_rows: qd,
                    kv_rows: kvd,
                    head_dim: c.head_dim,
                    cache_at,
                    k_cache: &kc,
                    v_cache: &vc,
                    rope: &rope,
                };
                let qkv_io = io(&x, &q, Some((&attn_norm, eps)), rope_kv, &step);
                dispatches.push(mv(&wqkv[0], qkv_io, KernelClass::Qkv));
            }
            let att_bind = bind(
                &attention,
                &[
                    (0, &q),
                    (2, &att),
                    (3, &kc),
                    (4, &vc),
                    (5, &shape),
                    (6, &step),
                    (8, &scratch),
                ],
            );
            dispatches.push(Dispatch::Attention(att_bind, c.n_heads as u32));
            // With post-norms (gemma3) a projection is stored, then normalised into the residual.
            let post_norm = |w: &Option<Weight>| {
                let (Some(pipe), Some(w)) = (&norm_add, w) else {
                    return None;
                };
                let g = table(&model.dequantized(w));
                Some(Dispatch::NormAdd(bind(
                    pipe,
                    &[(0, &x), (2, &proj), (5, &shape), (10, &g)],
                )))
            };
            let (after_wo, after_down) = (post_norm(&l.post_attn_norm), post_norm(&l.post_ffn_norm));
            let residual = |post: &Option<Dispatch>| match post {
                Some(_) => (&proj, Epilogue::Store),
                None => (&x, Epilogue::Add),
            };
            let (to, epilogue) = residual(&after_wo);
            let wo_io = MatvecIo {
                combine: Some(shares),
                ..io(&att, to, None, epilogue, &step)
            };
            dispatches.push(mv(&wo, wo_io, KernelClass::AttnOutput));
            dispatches.extend(after_wo);
            let act = if family.gelu() {
                Epilogue::GeGlu
            } else {
                Epilogue::SwiGlu
            };
            dispatches.push(mv(
                &wgu,
                io(&x, &h, Some((&ffn_norm, eps)), act, &step),
                KernelClass::GateUp,
            ));
            let (to, epilogue) = residual(&after_down);
            dispatches.push(mv(&wd, io(&h, to, None, epilogue, &step), KernelClass::Down));
            dispatches.extend(after_down);
        }
        let layer_dispatches = dispatches.len();
        let out_norm = table(&model.dequantized(&model.desc.output_norm));
        // The output head in row slices that each fit one binding (a 128k or 262k vocabulary
        // can exceed a device's 128 MiB), one dispatch each, writing its rows of the logits.
        let w = &model.desc.output;
        let (ty, bytes) = fuse(&model, &[w], false);
        let limit = ctx
            .limits
            .max_storage_buffer_binding_size
            .min(ctx.limits.max_buffer_size);
        let row_bytes = ty.bytes_for(w.cols as u64).expect("whole blocks") as usize;
        let slices = row_slices(w.rows, row_bytes, group, limit);
        for rows in slices.iter().cloned() {
            let name = match slices.len() {
                1 => w.name.clone(),
                _ => format!("{} rows {}..{}", w.name, rows.start, rows.end),
            };
            let head = put(&name, ty, w.cols, &bytes, rows.clone())?;
            let head_io = MatvecIo {
                head: true,
                out_rows: Some((rows.start, w.rows)),
                ..io(&x, &logits, Some((&out_norm, eps)), Epilogue::Store, &step)
            };
            dispatches.push(mv(&head, head_io, KernelClass::Head));
        }
        let shape = shape_buf(0, c.vocab_size, None);
        let top_k_io = [
            (0, &logits),
            (5, &shape),
            (6, &step),
            (7, &top_k_parts),
            (9, &candidates),
        ];
        if let Some(first) = &top_k_first {
            dispatches.push(Dispatch::TopKChunks(bind(first, &top_k_io), top_k_chunks as u32));
        }
        dispatches.push(Dispatch::TopK(bind(&top_k, &top_k_io)));
        let staging = Staging::new(&ctx, (seqs * (c.vocab_size * 4).max(MAX_TOP_K * 8)) as u64);
        Ok(Self {
            cos_sin: vec![0.0; inv_freqs.len() * n * c.head_dim],
            inv_freqs,
            embed_rows: vec![0.0; n * d],
            qkv_post,
            norm_add,
            model,
            ctx,
            matvec,
            attention,
            top_k,
            top_k_chunks: top_k_first,
            dispatches,
            layer_dispatches,
            x,
            logits,
            candidates,
            rope,
            step,
            staging,
            pending: None,
            read_buf: Vec::new(),
            capacity,
            max_splits: splits,
            ops_wg,
            pos: vec![0; seqs],
        })
    }

    /// Tokens in sequence 0's cache (the one `submit` and `submit_prefill` use).
    pub fn position(&self) -> usize {
        self.pos[0]
    }

    /// Sequences this engine holds.
    pub fn sequences(&self) -> usize {
        self.pos.len()
    }

    /// Empties every sequence's cache.
    pub fn reset(&mut self) {
        self.pos.fill(0);
    }

    pub fn context_capacity(&self) -> usize {
        self.capacity
    }

    /// Dispatches recorded per decoded token.
    pub fn dispatches_per_token(&self) -> usize {
        self.dispatches.len()
    }

    /// Bytes one column's result takes.
    fn result_bytes(&self, want: Want) -> u64 {
        match want {
            Want::Top(k) => (k * 8) as u64,
            Want::Logits => (self.model.config.vocab_size * 4) as u64,
        }
    }

    /// Checks the pass (`(sequence, token)` per column; a sequence's columns are its next
    /// tokens, in order) and writes its embedding rows, rotations and step uniform. `head`: the
    /// first column whose next-token result is wanted, and what of it.
    fn prepare(&mut self, cols: &[(usize, u32)], head: Option<(usize, Want)>) -> Result<Columns, GpuEngineError> {
        let c = &self.model.config;
        let n = cols.len();
        assert!((1..=MAX_COLUMNS).contains(&n), "{n} columns in one pass");
        if let Some((from, Want::Top(k))) = head {
            assert!((1..=MAX_TOP_K).contains(&k), "top-k of {k} candidates");
            assert!(
                n - from <= self.sequences(),
                "{} results for {} sequences",
                n - from,
                self.sequences()
            );
        }
        let (d, hd, half) = (c.d_model, c.head_dim, c.head_dim / 2);
        let mut pos = self.pos.clone();
        let mut step: Step = bytemuck::Zeroable::zeroed();
        for (j, &(seq, token)) in cols.iter().enumerate() {
            if token as usize >= c.vocab_size {
                return Err(EngineError::TokenOutOfRange {
                    token,
                    vocab: c.vocab_size,
                }
                .into());
            }
            if pos[seq] >= self.capacity {
                let needed = self.pos[seq] + cols.iter().filter(|(s, _)| *s == seq).count();
                return Err(EngineError::ContextFull {
                    needed,
                    capacity: self.capacity,
                }
                .into());
            }
            self.model.embed(token, &mut self.embed_rows[j * d..(j + 1) * d]);
            for (t, inv_freq) in self.inv_freqs.iter().enumerate() {
                let at = (t * MAX_COLUMNS + j) * hd;
                let (cos, sin) = self.cos_sin[at..at + hd].split_at_mut(half);
                rope_table(pos[seq], inv_freq, cos, sin);
            }
            let start = seq * self.capacity;
            step.cols[j] = [(start + pos[seq]) as u32, pos[seq] as u32, start as u32, 0];
            pos[seq] += 1;
        }
        step.n = n as u32;
        // Positions the longest column attends to: one share per workgroup's worth of them.
        let longest = cols.iter().map(|&(seq, _)| pos[seq]).max().unwrap_or(1);
        let splits = longest.div_ceil(self.ops_wg).clamp(1, self.max_splits) as u32;
        step.splits = splits;
        let (from, want) = head.unwrap_or((n, Want::Top(1)));
        step.head_from = from as u32;
        step.k = match want {
            Want::Top(k) => k as u32,
            Want::Logits => 0,
        };
        let q = &self.ctx.queue;
        q.write_buffer(&self.x, 0, bytemuck::cast_slice(&self.embed_rows[..n * d]));
        q.write_buffer(&self.rope, 0, bytemuck::cast_slice(&self.cos_sin));
        q.write_buffer(&self.step, 0, bytemuck::bytes_of(&step));
        self.pos = pos;
        Ok(Columns {
            n,
            head: n - from,
            splits,
        })
    }

    fn record(&self, pass: &mut wgpu::ComputePass<'_>, d: &Dispatch, cols: Columns, is_head: bool) {
        match d {
            Dispatch::Matvec(call, _) => self.matvec.encode(pass, call, if is_head { cols.head } else { cols.n }),
            Dispatch::Attention(bind, heads) => {
                pass.set_pipeline(&self.attention);
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(*heads, cols.splits, cols.n as u32);
            }
            Dispatch::QkvPost(bind, slots) => {
                pass.set_pipeline(self.qkv_post.as_ref().expect("made with its dispatches"));
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(*slots, 1, cols.n as u32);
            }
            Dispatch::NormAdd(bind) => {
                pass.set_pipeline(self.norm_add.as_ref().expect("made with its dispatches"));
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(1, 1, cols.n as u32);
            }
            Dispatch::TopK(bind) => {
                pass.set_pipeline(&self.top_k);
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(1, 1, cols.head as u32);
            }
            Dispatch::TopKChunks(bind, chunks) => {
                pass.set_pipeline(self.top_k_chunks.as_ref().expect("made with its dispatch"));
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(*chunks, 1, cols.head as u32);
            }
        }
    }

    fn copy_result(&self, enc: &mut wgpu::CommandEncoder, want: Want, columns: usize) {
        let src = match want {
            Want::Top(_) => &self.candidates,
            Want::Logits => &self.logits,
        };
        self.staging
            .copy_from(enc, src, columns as u64 * self.result_bytes(want));
    }

    /// Records and submits one token's pass (and the copy of its result) without waiting:
    /// one encoder, one compute pass, one submit. Read the result with [`GpuEngine::read`]
    /// (native) or [`GpuEngine::read_async`] (browser) before the next submit.
    pub fn submit(&mut self, token: u32, want: Want) -> Result<(), GpuEngineError> {
        self.submit_columns(&[(0, token)], Some((0, want)))
    }

    /// Appends `tokens[s]` to sequence `s` for every sequence in one pass (the weights read
    /// once for all of them); read each one's result with [`GpuEngine::read_all`] or
    /// [`GpuEngine::read_all_async`].
    pub fn submit_batch(&mut self, tokens: &[u32], want: Want) -> Result<(), GpuEngineError> {
        if tokens.len() != self.sequences() {
            return Err(GpuEngineError::Batch(format!(
                "{} tokens for {} sequences: one token per sequence",
                tokens.len(),
                self.sequences()
            )));
        }
        let cols: Vec<(usize, u32)> = tokens.iter().copied().enumerate().collect();
        self.submit_columns(&cols, Some((0, want)))
    }

    /// One pass over `cols`, its result (from column `head.0` on) copied for read-back.
    fn submit_columns(&mut self, cols: &[(usize, u32)], head: Option<(usize, Want)>) -> Result<(), GpuEngineError> {
        let columns = self.prepare(cols, head)?;
        let upto = match head {
            Some(_) => self.dispatches.len(),
            None => self.layer_dispatches,
        };
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for (i, d) in self.dispatches[..upto].iter().enumerate() {
                self.record(&mut pass, d, columns, i >= self.layer_dispatches);
            }
        }
        if let Some((_, want)) = head {
            self.copy_result(&mut enc, want, columns.head);
        }
        self.ctx.queue.submit([enc.finish()]);
        self.pending = head.map(|(_, want)| (want, columns.head));
        Ok(())
    }

    fn decode_results(&self) -> Result<Vec<TokenResult>, GpuEngineError> {
        let Some((want, columns)) = self.pending else {
            return Err(GpuError::Readback("nothing was submitted".into()).into());
        };
        let per = self.result_bytes(want) as usize;
        Ok(self.read_buf[..columns * per]
            .chunks_exact(per)
            .map(|bytes| {
                let words: &[u32] = bytemuck::cast_slice(bytes);
                match want {
                    Want::Top(_) => {
                        TokenResult::Top(words.chunks_exact(2).map(|p| (f32::from_bits(p[0]), p[1])).collect())
                    }
                    Want::Logits => TokenResult::Logits(bytemuck::cast_slice(words).to_vec()),
                }
            })
            .collect())
    }

    fn pending_bytes(&self) -> Result<u64, GpuEngineError> {
        let (want, columns) = self
            .pending
            .ok_or_else(|| GpuError::Readback("nothing was submitted".into()))?;
        Ok(columns as u64 * self.result_bytes(want))
    }

    /// Waits for the last submit and returns its result (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read(&mut self) -> Result<TokenResult, GpuEngineError> {
        Ok(self.read_all()?.swap_remove(0))
    }

    /// Waits for the last submit and returns each column's result (a batch: one per sequence).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_all(&mut self) -> Result<Vec<TokenResult>, GpuEngineError> {
        let bytes = self.pending_bytes()?;
        self.staging.read(&self.ctx, bytes, &mut self.read_buf)?;
        let r = self.decode_results();
        self.pending = None;
        r
    }

    /// Awaits the last submit's result (the browser; the event loop drives the map).
    pub async fn read_async(&mut self) -> Result<TokenResult, GpuEngineError> {
        Ok(self.read_all_async().await?.swap_remove(0))
    }

    /// Awaits each column's result of the last submit (a batch: one per sequence).
    pub async fn read_all_async(&mut self) -> Result<Vec<TokenResult>, GpuEngineError> {
        let bytes = self.pending_bytes()?;
        self.staging.read_async(bytes, &mut self.read_buf).await?;
        let r = self.decode_results();
        self.pending = None;
        r
    }

    /// Appends one token and returns every logit for the next (native; for tests and samplers
    /// that need the whole distribution).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn decode(&mut self, token: u32) -> Result<Vec<f32>, GpuEngineError> {
        self.submit(token, Want::Logits)?;
        Ok(self.read()?.into_logits())
    }

    /// Appends one token and returns the `k` highest logits for the next, highest first.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn decode_top(&mut self, token: u32, k: usize) -> Result<Vec<(f32, u32)>, GpuEngineError> {
        self.submit(token, Want::Top(k))?;
        Ok(self.read()?.into_top())
    }

    /// Appends one token to every sequence and returns each one's logits for its next token.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn decode_batch(&mut self, tokens: &[u32]) -> Result<Vec<Vec<f32>>, GpuEngineError> {
        self.submit_batch(tokens, Want::Logits)?;
        Ok(self.read_all()?.into_iter().map(TokenResult::into_logits).collect())
    }

    /// The prompt in passes of up to [`MAX_COLUMNS`] tokens (the result is read only for the
    /// last token).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn prefill(&mut self, tokens: &[u32], want: Want) -> Result<TokenResult, GpuEngineError> {
        self.submit_prefill(tokens, want)?;
        self.read()
    }

    /// Submits the prompt into sequence 0, leaving the last token's result to read back
    /// ([`GpuEngine::read`] or [`GpuEngine::read_async`]).
    pub fn submit_prefill(&mut self, tokens: &[u32], want: Want) -> Result<(), GpuEngineError> {
        self.submit_prefill_seq(0, tokens, want)
    }

    /// Submits the prompt into sequence `seq`: passes of up to [`MAX_COLUMNS`] tokens, each a
    /// matrix-matrix product per weight (every weight word serves several tokens) and causal
    /// attention per column, one submit each and no read-back between them; the output head
    /// runs for the last token only.
    pub fn submit_prefill_seq(&mut self, seq: usize, tokens: &[u32], want: Want) -> Result<(), GpuEngineError> {
        if tokens.is_empty() {
            return Err(EngineError::EmptyPrompt.into());
        }
        if seq >= self.sequences() {
            return Err(GpuEngineError::Batch(format!(
                "sequence {seq} of an engine holding {}",
                self.sequences()
            )));
        }
        if self.pos[seq] + tokens.len() > self.capacity {
            return Err(EngineError::ContextFull {
                needed: self.pos[seq] + tokens.len(),
                capacity: self.capacity,
            }
            .into());
        }
        let chunks: Vec<&[u32]> = tokens.chunks(MAX_COLUMNS).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let cols: Vec<(usize, u32)> = chunk.iter().map(|&t| (seq, t)).collect();
            let head = (i + 1 == chunks.len()).then_some((chunk.len() - 1, want));
            self.submit_columns(&cols, head)?;
        }
        Ok(())
    }

    /// Decodes `token` like [`GpuEngine::submit`], but times each kernel class: with GPU
    /// timestamps (one pass per dispatch, timestamps at its ends) where the adapter has
    /// `timestamp-query`, else one submit per dispatch timed on the CPU (submit → done).
    /// Returns dispatches and seconds per class; the token's result is then read as usual.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn profile(&mut self, token: u32, want: Want) -> Result<Profile, GpuEngineError> {
        let columns = self.prepare(&[(0, token)], Some((0, want)))?;
        let n = self.dispatches.len();
        let mut secs = vec![0f64; n];
        let timestamps = self.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY);
        if timestamps {
            let dev = &self.ctx.device;
            let set = dev.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("profile"),
                ty: wgpu::QueryType::Timestamp,
                count: (2 * n) as u32,
            });
            let resolve = self.ctx.create_buffer(&wgpu::BufferDescriptor {
                label: Some("profile resolve"),
                size: (16 * n) as u64,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let mut enc = dev.create_command_encoder(&Default::default());
            for (i, d) in self.dispatches.iter().enumerate() {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &set,
                        beginning_of_pass_write_index: Some((2 * i) as u32),
                        end_of_pass_write_index: Some((2 * i + 1) as u32),
                    }),
                });
                self.record(&mut pass, d, columns, i >= self.layer_dispatches);
            }
            enc.resolve_query_set(&set, 0..(2 * n) as u32, &resolve, 0);
            self.ctx.queue.submit([enc.finish()]);
            let raw = crate::readback::read_f32(&self.ctx, &resolve, 4 * n)?;
            let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&raw);
            let period = self.ctx.queue.get_timestamp_period() as f64 * 1e-9;
            for (i, s) in secs.iter_mut().enumerate() {
                *s = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period;
            }
        } else {
            for (i, d) in self.dispatches.iter().enumerate() {
                let mut enc = self.ctx.device.create_command_encoder(&Default::default());
                {
                    let mut pass = enc.begin_compute_pass(&Default::default());
                    self.record(&mut pass, d, columns, i >= self.layer_dispatches);
                }
                let start = std::time::Instant::now();
                self.ctx.queue.submit([enc.finish()]);
                self.ctx
                    .device
                    .poll(wgpu::PollType::wait_indefinitely())
                    .map_err(|e| GpuError::Readback(e.to_string()))?;
                secs[i] = start.elapsed().as_secs_f64();
            }
        }
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        self.copy_result(&mut enc, want, 1);
        self.ctx.queue.submit([enc.finish()]);
        self.pending = Some((want, 1));
        let mut classes: Vec<ClassTime> = Vec::new();
        for (d, s) in self.dispatches.iter().zip(secs) {
            let class = d.class();
            match classes.iter_mut().find(|c| c.class == class) {
                Some(c) => {
                    c.dispatches += 1;
                    c.seconds += s;
                }
                None => classes.push(ClassTime {
                    class,
                    dispatches: 1,
                    seconds: s,
                }),
            }
        }
        Ok(Profile { classes, timestamps })
    }
}

/// A token's result as read back.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenResult {
    /// `(logit, token)`, highest first, ties by lower token.
    Top(Vec<(f32, u32)>),
    Logits(Vec<f32>),
}

impl TokenResult {
    pub fn into_logits(self) -> Vec<f32> {
        match self {
            TokenResult::Logits(l) => l,
            TokenResult::Top(_) => panic!("the token was submitted for its top-k, not its logits"),
        }
    }

    pub fn into_top(self) -> Vec<(f32, u32)> {
        match self {
            TokenResult::Top(t) => t,
            TokenResult::Logits(_) => panic!("the token was submitted for its logits, not its top-k"),
        }
    }
}

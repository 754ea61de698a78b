//! The engine's second part: the graph, the one place where a model family's steps become
//! kernels — the pipelines a model needs ([`Kernels`]) and the list of dispatches one pass
//! records ([`build`]), bound to the shared weights (weights.rs) and one engine's sequence state
//! (sequences.rs).
//!
//! First the embedding lookup (embed.rs; none where the host writes the rows), then five
//! dispatches per layer, each a fused kernel:
//! 1. RMSNorm → Q·K·V (one stacked matrix) → RoPE on Q and K, K and V into the cache;
//! 2. attention of the one query over the cache, split across workgroups (flash-decoding);
//! 3. the attention shares combined, the output projection, added into the residual stream;
//! 4. RMSNorm → gate·up (rows interleaved) → SwiGLU;
//! 5. down projection, added into the residual stream;
//!
//! then RMSNorm → output head, and top-k of the logits: 5 × layers + 4 with the lookup and
//! top-k's two stages (154 for SmolLM2; an output head or embedding larger than one binding
//! takes one dispatch per row slice).
//! Families other than llama add a Q/K/V step (head norms, biases, RoPE on halves) and Gemma 3
//! its post-norms.

use crate::GpuContext;
use crate::engine_error::GpuEngineError;
use crate::matvec::{Epilogue, MAX_COLUMNS, MatvecCall, MatvecIo, MatvecKernels};
use crate::sequences::Sequences;
use crate::weights::{LayerWeights, Weights, one_type};
use tokscope_core::model::{Family, Model};

pub const OPS_SHADER: &str = crate::wgsl!("ops.wgsl");

/// ops.wgsl as compiled: after half.wgsl (the KV cache's f16 packing).
pub fn ops_source() -> String {
    format!("{}{OPS_SHADER}", crate::matvec::HALF)
}

pub use crate::top_k::{MAX_TOP_K, TOP_K_CHUNK};

/// ops.wgsl `MAX_HD`: the widest head `qkv_post` holds in workgroup memory.
const MAX_QKV_HEAD_DIM: usize = 256;

/// ops.wgsl `qkv_post`'s flags.
const QKV_BIAS: u32 = 1;
const QKV_NORM: u32 = 2;
const ROPE_HALVES: u32 = 4;

/// ops.wgsl's per-layer uniform: the layer's shape, where its cache and RoPE table sit.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LayerShape {
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
    /// The token embedding's row, looked up on the GPU.
    Embed,
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
            KernelClass::Embed => "embed",
        }
    }
}

impl serde::Serialize for KernelClass {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

pub(crate) enum Dispatch {
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
    /// The embedding lookup of one row slice: (bindings, workgroups per column).
    Embed(wgpu::BindGroup, u32),
}

// Only `profile` (native) asks.
#[cfg(not(target_arch = "wasm32"))]
impl Dispatch {
    pub fn class(&self) -> KernelClass {
        match self {
            Dispatch::Matvec(_, class) => *class,
            Dispatch::Attention(..) => KernelClass::Attention,
            Dispatch::TopK(_) | Dispatch::TopKChunks(..) => KernelClass::TopK,
            Dispatch::QkvPost(..) | Dispatch::NormAdd(_) => KernelClass::Norms,
            Dispatch::Embed(..) => KernelClass::Embed,
        }
    }
}

/// A pass's column counts: all of them (the layers) and the head's (from `Step::head_from`),
/// and attention's workgroups per (column, head).
#[derive(Clone, Copy)]
pub(crate) struct Columns {
    pub n: usize,
    pub head: usize,
    pub splits: u32,
}

/// ops.wgsl's workgroup size on this kind of adapter (see its `WG`).
fn ops_workgroup(device_type: wgpu::DeviceType) -> u32 {
    match device_type {
        wgpu::DeviceType::Cpu => 64,
        _ => 256,
    }
}

/// The pipelines a model's passes run.
pub(crate) struct Kernels {
    pub matvec: MatvecKernels,
    attention: wgpu::ComputePipeline,
    top_k: wgpu::ComputePipeline,
    /// Top-k's first stage, a workgroup per chunk of the vocabulary (when it has several).
    top_k_chunks: Option<(wgpu::ComputePipeline, u32)>,
    /// The Q/K/V step, where matvec's fused RoPE epilogue cannot do it.
    pub qkv_post: Option<wgpu::ComputePipeline>,
    /// Gemma 3's post-norm residual adds.
    pub norm_add: Option<wgpu::ComputePipeline>,
    /// The embedding lookup, where the embedding's type has a kernel for it (embed.rs).
    pub embed: Option<wgpu::ComputePipeline>,
    /// ops.wgsl's workgroup size: a pass takes one attention share per this many positions.
    pub ops_wg: usize,
}

impl Kernels {
    pub fn new<B: AsRef<[u8]>>(ctx: &GpuContext, model: &Model<B>) -> Result<Self, GpuEngineError> {
        let c = &model.config;
        if c.rope_dim != c.head_dim {
            return Err(GpuEngineError::Unsupported(format!(
                "partial RoPE ({} of {} dims) is not implemented on the GPU yet",
                c.rope_dim, c.head_dim
            )));
        }
        if !c.head_dim.is_multiple_of(4) {
            return Err(GpuEngineError::Unsupported(format!(
                "a head dimension of {} (the GPU kernels take multiples of 4)",
                c.head_dim
            )));
        }
        let module = ctx.shader("ops.wgsl", &ops_source());
        let ops_wg = ops_workgroup(ctx.kind) as usize;
        let ops_workgroup = [("WG", ops_wg as f64)];
        let top_k_stage = |stage: u32| {
            let constants = [
                ("WG", ops_wg as f64),
                ("TOP_K_STAGE", stage as f64),
                ("TOP_K_CHUNK", TOP_K_CHUNK as f64),
                ("TOP_K_MAX", MAX_TOP_K as f64),
            ];
            ctx.pipeline_with(&module, "top_k", &constants)
        };
        let chunks = c.vocab_size.div_ceil(TOP_K_CHUNK);
        let (top_k, top_k_chunks) = match chunks {
            1 => (top_k_stage(0), None),
            _ => (top_k_stage(2), Some((top_k_stage(1), chunks as u32))),
        };
        // The llama family's Q/K/V step is matvec's fused RoPE epilogue; the others need a
        // whole head (its norm) or pair across it (RoPE on halves): a step of their own.
        // So do Q, K and V of different types: they run as three products into one buffer.
        let fused_rope = c.family == Family::Llama && model.desc.layers.iter().all(one_type);
        if !fused_rope && c.head_dim > MAX_QKV_HEAD_DIM {
            return Err(GpuEngineError::Unsupported(format!(
                "a head dimension of {} (the Q/K/V step holds heads of up to {MAX_QKV_HEAD_DIM})",
                c.head_dim
            )));
        }
        Ok(Self {
            matvec: MatvecKernels::new(ctx),
            attention: ctx.pipeline_with(&module, "attention", &ops_workgroup),
            top_k,
            top_k_chunks,
            qkv_post: (!fused_rope).then(|| ctx.pipeline_with(&module, "qkv_post", &ops_workgroup)),
            norm_add: c
                .family
                .post_norms()
                .then(|| ctx.pipeline_with(&module, "norm_add", &ops_workgroup)),
            embed: crate::embed::pipeline(ctx, model.desc.token_embd.ty),
            ops_wg,
        })
    }

    /// What the sequences' buffers must hold for these kernels.
    pub fn needs(&self) -> crate::sequences::Needs {
        crate::sequences::Needs {
            ops_wg: self.ops_wg,
            qkv_post: self.qkv_post.is_some(),
            norm_add: self.norm_add.is_some(),
        }
    }

    /// Records one dispatch into a pass over `cols` columns (the head's count for the head's).
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, d: &Dispatch, cols: Columns, is_head: bool) {
        let mut run = |p: &wgpu::ComputePipeline, bind: &wgpu::BindGroup, groups: (u32, u32, u32)| {
            pass.set_pipeline(p);
            pass.set_bind_group(0, bind, &[]);
            pass.dispatch_workgroups(groups.0, groups.1, groups.2);
        };
        let (n, head) = (cols.n as u32, cols.head as u32);
        match d {
            Dispatch::Matvec(call, _) => self.matvec.encode(pass, call, if is_head { cols.head } else { cols.n }),
            Dispatch::Attention(bind, heads) => run(&self.attention, bind, (*heads, cols.splits, n)),
            Dispatch::QkvPost(bind, slots) => run(
                self.qkv_post.as_ref().expect("made with its dispatches"),
                bind,
                (*slots, 1, n),
            ),
            Dispatch::NormAdd(bind) => run(
                self.norm_add.as_ref().expect("made with its dispatches"),
                bind,
                (1, 1, n),
            ),
            Dispatch::TopK(bind) => run(&self.top_k, bind, (1, 1, head)),
            Dispatch::Embed(bind, groups) => run(
                self.embed.as_ref().expect("made with its dispatches"),
                bind,
                (*groups, 1, n),
            ),
            Dispatch::TopKChunks(bind, chunks) => run(
                &self.top_k_chunks.as_ref().expect("made with its dispatch").0,
                bind,
                (*chunks, 1, head),
            ),
        }
    }
}

/// What every dispatch of one engine binds against: the device, the model's shape, the
/// sequences' buffers.
struct Binder<'a, B> {
    ctx: &'a GpuContext,
    model: &'a Model<B>,
    s: &'a Sequences,
}

impl<'a, B: AsRef<[u8]>> Binder<'a, B> {
    /// ops.wgsl's uniform for a layer (`None`: the head's top-k) whose cache region starts at
    /// `cache_at`, over `rows` outputs.
    fn shape(&self, cache_at: usize, rows: usize, layer: Option<usize>) -> wgpu::Buffer {
        let (c, s) = (&self.model.config, self.s);
        let family = c.family;
        let window = layer.filter(|&li| c.is_sliding(li)).and(c.sliding_window).unwrap_or(0);
        let flags = (family.qkv_bias() as u32 * QKV_BIAS)
            | (family.qk_norm() as u32 * QKV_NORM)
            | (family.rope_halves() as u32 * ROPE_HALVES);
        let shape = LayerShape {
            d: rows as u32,
            eps: c.rms_eps,
            n_heads: c.n_heads as u32,
            n_kv_heads: c.n_kv_heads as u32,
            head_dim: c.head_dim as u32,
            max_splits: s.max_splits as u32,
            cache_at: cache_at as u32,
            capacity: s.capacity as u32,
            ml_at: s.shares.ml_at as u32,
            window: window as u32,
            scale: c.attn_scale(),
            flags,
            rope_at: (layer.map_or(0, |li| s.layer_table[li]) * MAX_COLUMNS * c.head_dim) as u32,
            _pad: [0; 3],
        };
        self.ctx.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("shape"),
            contents: bytemuck::bytes_of(&shape),
            usage: wgpu::BufferUsages::UNIFORM,
        })
    }

    fn bind(&self, p: &wgpu::ComputePipeline, entries: &[(u32, &wgpu::Buffer)]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = entries
            .iter()
            .map(|(binding, buf)| wgpu::BindGroupEntry {
                binding: *binding,
                resource: buf.as_entire_binding(),
            })
            .collect();
        self.ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &p.get_bind_group_layout(0),
            entries: &entries,
        })
    }

    /// A matrix product from `x` into `y`, RMSNorm'd first with `norm`'s gains where given.
    fn io(
        &self,
        x: &'a wgpu::Buffer,
        y: &'a wgpu::Buffer,
        norm: Option<&'a wgpu::Buffer>,
        epilogue: Epilogue<'a>,
    ) -> MatvecIo<'a> {
        MatvecIo {
            x,
            y,
            norm: norm.map(|g| (g, self.model.config.rms_eps)),
            epilogue,
            step: &self.s.step,
            head: false,
            combine: None,
            out_rows: None,
        }
    }
}

/// The dispatch list of one pass for `model` over shared `w` and one engine's `s`, and how
/// many of them are the layers' (the rest: the head's slices and top-k).
pub(crate) fn build<B: AsRef<[u8]>>(
    ctx: &GpuContext,
    model: &Model<B>,
    k: &mut Kernels,
    w: &Weights,
    s: &Sequences,
) -> (Vec<Dispatch>, usize) {
    let b = Binder { ctx, model, s };
    let mut dispatches = Vec::new();
    if let (Some(pipeline), Some(slices)) = (k.embed.as_ref(), w.embedding(model)) {
        let scale = model.config.embed_scale();
        for (bind, groups) in crate::embed::bind(ctx, pipeline, slices, scale, &s.tokens, &s.x) {
            dispatches.push(Dispatch::Embed(bind, groups));
        }
    }
    for (li, lw) in w.layers.iter().enumerate() {
        layer(&b, k, li, lw, &mut dispatches);
    }
    let layer_dispatches = dispatches.len();
    head(&b, k, w, &mut dispatches);
    (dispatches, layer_dispatches)
}

/// Layer `li`'s dispatches: Q/K/V (and its own step where matvec's epilogue cannot do it),
/// attention, the output projection, gate·up, down, and Gemma 3's post-norms.
fn layer<'a, B: AsRef<[u8]>>(
    b: &Binder<'a, B>,
    k: &mut Kernels,
    li: usize,
    lw: &'a LayerWeights,
    out: &mut Vec<Dispatch>,
) {
    let (c, s) = (&b.model.config, b.s);
    let cache_at = li * s.layer_floats;
    let shape = b.shape(cache_at, c.d_model, Some(li));
    qkv(b, k, lw, &shape, cache_at, out);
    let att_bind = b.bind(
        &k.attention,
        &[
            (0, &s.q),
            (2, &s.att),
            (3, &s.kc),
            (4, &s.vc),
            (5, &shape),
            (6, &s.step),
            (8, &s.scratch),
        ],
    );
    out.push(Dispatch::Attention(att_bind, c.n_heads as u32));
    // With post-norms (gemma3) a projection is stored, then normalised into the residual.
    let post_norm = |g: &Option<wgpu::Buffer>| {
        let (Some(pipe), Some(g)) = (k.norm_add.as_ref(), g) else {
            return None;
        };
        Some(Dispatch::NormAdd(
            b.bind(pipe, &[(0, &s.x), (2, &s.proj), (5, &shape), (10, g)]),
        ))
    };
    let (after_wo, after_down) = (post_norm(&lw.post_attn_norm), post_norm(&lw.post_ffn_norm));
    let residual = |post: &Option<Dispatch>| match post {
        Some(_) => (&s.proj, Epilogue::Store),
        None => (&s.x, Epilogue::Add),
    };
    let (to, epilogue) = residual(&after_wo);
    let wo_io = MatvecIo {
        combine: Some(s.shares),
        ..b.io(&s.att, to, None, epilogue)
    };
    out.push(Dispatch::Matvec(
        k.matvec.bind(b.ctx, &lw.wo, wo_io),
        KernelClass::AttnOutput,
    ));
    out.extend(after_wo);
    let act = if c.family.gelu() {
        Epilogue::GeGlu
    } else {
        Epilogue::SwiGlu
    };
    let gate_up = b.io(&s.x, &s.h, Some(&lw.ffn_norm), act);
    out.push(Dispatch::Matvec(
        k.matvec.bind(b.ctx, &lw.gate_up, gate_up),
        KernelClass::GateUp,
    ));
    let (to, epilogue) = residual(&after_down);
    let down = b.io(&s.h, to, None, epilogue);
    out.push(Dispatch::Matvec(
        k.matvec.bind(b.ctx, &lw.down, down),
        KernelClass::Down,
    ));
    out.extend(after_down);
}

/// RMSNorm → Q·K·V: RoPE and the KV write fused into the product (llama, one Q/K/V type), or
/// the products stored as they come and then the Q/K/V step (bias, head norms, RoPE, KV write).
fn qkv<'a, B: AsRef<[u8]>>(
    b: &Binder<'a, B>,
    k: &mut Kernels,
    lw: &'a LayerWeights,
    shape: &wgpu::Buffer,
    cache_at: usize,
    out: &mut Vec<Dispatch>,
) {
    let (c, s) = (&b.model.config, b.s);
    let (qd, kvd) = (c.q_dim(), c.kv_dim());
    let Some(post) = k.qkv_post.as_ref() else {
        let rope_kv = Epilogue::RopeKv {
            q_rows: qd,
            kv_rows: kvd,
            head_dim: c.head_dim,
            cache_at,
            k_cache: &s.kc,
            v_cache: &s.vc,
            rope: &s.rope,
        };
        let io = b.io(&s.x, &s.q, Some(&lw.attn_norm), rope_kv);
        out.push(Dispatch::Matvec(k.matvec.bind(b.ctx, &lw.qkv[0], io), KernelClass::Qkv));
        return;
    };
    let mut at = 0;
    for m in &lw.qkv {
        let into = MatvecIo {
            out_rows: Some((at, qd + 2 * kvd)),
            ..b.io(&s.x, &s.qkv, Some(&lw.attn_norm), Epilogue::Store)
        };
        out.push(Dispatch::Matvec(k.matvec.bind(b.ctx, m, into), KernelClass::Qkv));
        at += m.rows;
    }
    let (g, bias) = (
        lw.qk_norm.as_ref().expect("uploaded for the Q/K/V step"),
        lw.qkv_bias.as_ref().expect("uploaded for the Q/K/V step"),
    );
    let post_bind = b.bind(
        post,
        &[
            (0, &s.qkv),
            (2, &s.q),
            (3, &s.kc),
            (4, &s.vc),
            (5, shape),
            (6, &s.step),
            (10, g),
            (11, bias),
            (12, &s.rope),
        ],
    );
    out.push(Dispatch::QkvPost(post_bind, (c.n_heads + 2 * c.n_kv_heads) as u32));
}

/// RMSNorm → the output head's row slices, one dispatch each writing its rows of the logits;
/// then top-k (in two stages over a large vocabulary).
fn head<'a, B: AsRef<[u8]>>(b: &Binder<'a, B>, k: &mut Kernels, w: &'a Weights, out: &mut Vec<Dispatch>) {
    let s = b.s;
    for (rows, m) in &w.head {
        let io = MatvecIo {
            head: true,
            out_rows: Some((rows.start, b.model.desc.output.rows)),
            ..b.io(&s.x, &s.logits, Some(&w.output_norm), Epilogue::Store)
        };
        out.push(Dispatch::Matvec(k.matvec.bind(b.ctx, m, io), KernelClass::Head));
    }
    let shape = b.shape(0, b.model.config.vocab_size, None);
    let top_k_io = [
        (0, &s.logits),
        (5, &shape),
        (6, &s.step),
        (7, &s.top_k_parts),
        (9, &s.candidates),
    ];
    if let Some((first, chunks)) = k.top_k_chunks.as_ref() {
        out.push(Dispatch::TopKChunks(b.bind(first, &top_k_io), *chunks));
    }
    out.push(Dispatch::TopK(b.bind(&k.top_k, &top_k_io)));
}

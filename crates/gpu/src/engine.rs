//! The GPU executor of a [`ModelDesc`](tokscope_core::model::ModelDesc), decoding one token per
//! submit: every pipeline, buffer and bind group is made at load; a token writes its embedding
//! row, RoPE table and step uniform (a few KB), records one compute pass and submits it once,
//! with the copy of its result (the top-k candidates: 8 bytes when greedy) in the same submit.
//!
//! Five dispatches per layer, each a fused kernel:
//! 1. RMSNorm → Q·K·V (one stacked matrix) → RoPE on Q and K, K and V into the cache;
//! 2. attention of the one query over the cache;
//! 3. output projection, added into the residual stream;
//! 4. RMSNorm → gate·up (rows interleaved) → SwiGLU;
//! 5. down projection, added into the residual stream;
//!
//! then RMSNorm → output head, and top-k of the logits: 5 × layers + 2.

use crate::fused::fuse;
use crate::matvec::{Epilogue, GpuMatrix, MatvecCall, MatvecIo, MatvecKernels, Step};
use crate::readback::Staging;
use crate::repack::repack;
use crate::{GpuContext, GpuError};
use std::sync::Arc;
use tokscope_core::cpu::EngineError;
use tokscope_core::cpu::ops::rope_table;
use tokscope_core::model::{Model, Weight};
use wgpu::util::DeviceExt;

pub const OPS_SHADER: &str = include_str!("ops.wgsl");
/// The most candidates the top-k kernel returns; samplers wanting more read every logit.
pub const MAX_TOP_K: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum GpuEngineError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Unsupported(String),
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Shape {
    d: u32,
    eps: f32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    ffn: u32,
    cache_at: u32,
    capacity: u32,
}

/// What a dispatch computes, for the time split per kernel class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelClass {
    /// The layers' matrix products with their fused norms and epilogues.
    Matvec,
    Attention,
    /// RMSNorm → output head, and the top-k of the logits.
    Head,
}

enum Dispatch {
    Matvec(MatvecCall),
    Attention(wgpu::BindGroup, u32),
    TopK(wgpu::BindGroup),
}

// Only `profile` (native) asks.
#[cfg(not(target_arch = "wasm32"))]
impl Dispatch {
    fn class(&self, is_head: bool) -> KernelClass {
        match self {
            _ if is_head => KernelClass::Head,
            Dispatch::Matvec(_) => KernelClass::Matvec,
            Dispatch::Attention(..) => KernelClass::Attention,
            Dispatch::TopK(_) => KernelClass::Head,
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
    dispatches: Vec<Dispatch>,
    x: wgpu::Buffer,
    logits: wgpu::Buffer,
    candidates: wgpu::Buffer,
    rope: wgpu::Buffer,
    step: wgpu::Buffer,
    staging: Staging,
    pending: Option<Want>,
    read_buf: Vec<u8>,
    inv_freq: Vec<f32>,
    capacity: usize,
    pos: usize,
    embed_row: Vec<f32>,
    cos_sin: Vec<f32>,
}

fn storage(ctx: &GpuContext, label: &str, floats: usize) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
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
        mut progress: impl FnMut(u64, u64),
    ) -> Result<Self, GpuEngineError> {
        let c = &model.config;
        if c.rope_dim != c.head_dim {
            return Err(GpuEngineError::Unsupported(format!(
                "partial RoPE ({} of {} dims) is not implemented on the GPU yet",
                c.rope_dim, c.head_dim
            )));
        }
        let capacity = context.clamp(1, c.context_length);
        let dev = &ctx.device;
        let module = ctx.shader("ops.wgsl", OPS_SHADER);
        let attention = ctx.pipeline(&module, "attention");
        let top_k = ctx.pipeline(&module, "top_k");
        let matvec = MatvecKernels::new(&ctx);
        let (d, qd, kvd, fd) = (c.d_model, c.q_dim(), c.kv_dim(), c.ffn_dim);
        let x = storage(&ctx, "x", d);
        let q = storage(&ctx, "q", qd);
        let att = storage(&ctx, "att", qd);
        let h = storage(&ctx, "swiglu", fd);
        let logits = storage(&ctx, "logits", c.vocab_size);
        let candidates = storage(&ctx, "top-k", 2 * MAX_TOP_K);
        let cache_floats = c.n_layers * capacity * kvd;
        ctx.check_binding("KV cache", (cache_floats * 4) as u64)?;
        let kc = storage(&ctx, "K cache", cache_floats);
        let vc = storage(&ctx, "V cache", cache_floats);
        let scratch = storage(&ctx, "attention scores", c.n_heads * capacity);
        let rope = storage(&ctx, "rope cos/sin", c.head_dim);
        let step = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("step"),
            size: std::mem::size_of::<Step>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let total: u64 = model.desc.weights().iter().map(|w| w.n_bytes()).sum();
        let mut done = 0u64;
        let mut upload = |name: &str, parts: &[&Weight], interleave: bool| -> Result<GpuMatrix, GpuEngineError> {
            let (ty, bytes) = fuse(&model, parts, interleave);
            let rows = parts.iter().map(|w| w.rows).sum();
            let packed =
                repack(ty, rows, parts[0].cols, &bytes, matvec.shape().rows as usize).map_err(GpuError::from)?;
            let m = GpuMatrix::upload(&ctx, name, &packed)?;
            done += parts.iter().map(|w| w.n_bytes()).sum::<u64>();
            progress(done.min(total), total);
            Ok(m)
        };
        let shape_buf = |cache_at: usize, rows: usize| {
            let s = Shape {
                d: rows as u32,
                eps: c.rms_eps,
                n_heads: c.n_heads as u32,
                n_kv_heads: c.n_kv_heads as u32,
                head_dim: c.head_dim as u32,
                ffn: fd as u32,
                cache_at: cache_at as u32,
                capacity: capacity as u32,
            };
            dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("shape"),
                contents: bytemuck::bytes_of(&s),
                usage: wgpu::BufferUsages::UNIFORM,
            })
        };
        let table = |data: &[f32]| {
            dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
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
            }
        }
        let mv = |m: &GpuMatrix, io: MatvecIo<'_>| Dispatch::Matvec(matvec.bind(&ctx, m, io));
        let mut dispatches = Vec::new();
        for (li, l) in model.desc.layers.iter().enumerate() {
            let cache_at = li * capacity * kvd;
            let attn_norm = table(&model.dequantized(&l.attn_norm));
            let ffn_norm = table(&model.dequantized(&l.ffn_norm));
            let wqkv = upload(&format!("blk.{li}.attn_qkv"), &[&l.wq, &l.wk, &l.wv], false)?;
            let wo = upload(&l.wo.name, &[&l.wo], false)?;
            let wgu = upload(&format!("blk.{li}.ffn_gate_up"), &[&l.w_gate, &l.w_up], true)?;
            let wd = upload(&l.w_down.name, &[&l.w_down], false)?;
            let rope_kv = Epilogue::RopeKv {
                q_rows: qd,
                kv_rows: kvd,
                head_dim: c.head_dim,
                cache_at,
                k_cache: &kc,
                v_cache: &vc,
                rope: &rope,
            };
            dispatches.push(mv(&wqkv, io(&x, &q, Some((&attn_norm, eps)), rope_kv, &step)));
            let shape = shape_buf(cache_at, d);
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
            dispatches.push(mv(&wo, io(&att, &x, None, Epilogue::Add, &step)));
            dispatches.push(mv(&wgu, io(&x, &h, Some((&ffn_norm, eps)), Epilogue::SwiGlu, &step)));
            dispatches.push(mv(&wd, io(&h, &x, None, Epilogue::Add, &step)));
        }
        let out_norm = table(&model.dequantized(&model.desc.output_norm));
        let head = upload(&model.desc.output.name, &[&model.desc.output], false)?;
        dispatches.push(mv(
            &head,
            io(&x, &logits, Some((&out_norm, eps)), Epilogue::Store, &step),
        ));
        let shape = shape_buf(0, c.vocab_size);
        dispatches.push(Dispatch::TopK(bind(
            &top_k,
            &[(0, &logits), (5, &shape), (6, &step), (9, &candidates)],
        )));
        let staging = Staging::new(&ctx, (c.vocab_size * 4).max(MAX_TOP_K * 8) as u64);
        Ok(Self {
            inv_freq: model.rope_inv_freq(),
            embed_row: vec![0.0; d],
            cos_sin: vec![0.0; c.head_dim],
            model,
            ctx,
            matvec,
            attention,
            top_k,
            dispatches,
            x,
            logits,
            candidates,
            rope,
            step,
            staging,
            pending: None,
            read_buf: Vec::new(),
            capacity,
            pos: 0,
        })
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn reset(&mut self) {
        self.pos = 0;
    }

    pub fn context_capacity(&self) -> usize {
        self.capacity
    }

    /// Dispatches recorded per decoded token.
    pub fn dispatches_per_token(&self) -> usize {
        self.dispatches.len()
    }

    fn result_bytes(&self, want: Want) -> u64 {
        match want {
            Want::Top(k) => (k * 8) as u64,
            Want::Logits => (self.model.config.vocab_size * 4) as u64,
        }
    }

    /// Checks the token and the context, then writes the token's embedding row, RoPE table and
    /// step uniform.
    fn prepare(&mut self, token: u32, want: Want) -> Result<(), GpuEngineError> {
        let c = &self.model.config;
        if token as usize >= c.vocab_size {
            return Err(EngineError::TokenOutOfRange {
                token,
                vocab: c.vocab_size,
            }
            .into());
        }
        if self.pos >= self.capacity {
            return Err(EngineError::ContextFull {
                needed: self.pos + 1,
                capacity: self.capacity,
            }
            .into());
        }
        if let Want::Top(k) = want {
            assert!((1..=MAX_TOP_K).contains(&k), "top-k of {k} candidates");
        }
        self.model.embed(token, &mut self.embed_row);
        let half = c.head_dim / 2;
        let (cos, sin) = self.cos_sin.split_at_mut(half);
        rope_table(self.pos, &self.inv_freq, cos, sin);
        let q = &self.ctx.queue;
        q.write_buffer(&self.x, 0, bytemuck::cast_slice(&self.embed_row));
        q.write_buffer(&self.rope, 0, bytemuck::cast_slice(&self.cos_sin));
        let step = Step {
            pos: self.pos as u32,
            len: self.pos as u32 + 1,
            k: match want {
                Want::Top(k) => k as u32,
                Want::Logits => 0,
            },
            _pad: 0,
        };
        q.write_buffer(&self.step, 0, bytemuck::bytes_of(&step));
        Ok(())
    }

    fn record(&self, pass: &mut wgpu::ComputePass<'_>, d: &Dispatch) {
        match d {
            Dispatch::Matvec(call) => self.matvec.encode(pass, call),
            Dispatch::Attention(bind, groups) => {
                pass.set_pipeline(&self.attention);
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(*groups, 1, 1);
            }
            Dispatch::TopK(bind) => {
                pass.set_pipeline(&self.top_k);
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(1, 1, 1);
            }
        }
    }

    fn copy_result(&self, enc: &mut wgpu::CommandEncoder, want: Want) {
        let src = match want {
            Want::Top(_) => &self.candidates,
            Want::Logits => &self.logits,
        };
        self.staging.copy_from(enc, src, self.result_bytes(want));
    }

    /// Records and submits one token's pass (and the copy of its result) without waiting:
    /// one encoder, one compute pass, one submit. Read the result with [`GpuEngine::read`]
    /// (native) or [`GpuEngine::read_async`] (browser) before the next submit.
    pub fn submit(&mut self, token: u32, want: Want) -> Result<(), GpuEngineError> {
        self.submit_inner(token, Some(want))
    }

    /// A prompt token whose logits nobody reads: the layers only, without the output head.
    pub fn submit_prompt_token(&mut self, token: u32) -> Result<(), GpuEngineError> {
        self.submit_inner(token, None)
    }

    fn submit_inner(&mut self, token: u32, want: Option<Want>) -> Result<(), GpuEngineError> {
        self.prepare(token, want.unwrap_or(Want::Top(1)))?;
        let layers = match want {
            Some(_) => self.dispatches.len(),
            None => self.dispatches.len() - 2,
        };
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for d in &self.dispatches[..layers] {
                self.record(&mut pass, d);
            }
        }
        if let Some(want) = want {
            self.copy_result(&mut enc, want);
        }
        self.ctx.queue.submit([enc.finish()]);
        self.pending = want;
        self.pos += 1;
        Ok(())
    }

    fn decode_result(&self) -> Result<TokenResult, GpuEngineError> {
        let words: &[u32] = bytemuck::cast_slice(&self.read_buf);
        Ok(match self.pending {
            Some(Want::Top(_)) => {
                TokenResult::Top(words.chunks_exact(2).map(|p| (f32::from_bits(p[0]), p[1])).collect())
            }
            Some(Want::Logits) => TokenResult::Logits(bytemuck::cast_slice(words).to_vec()),
            None => return Err(GpuError::Readback("nothing was submitted".into()).into()),
        })
    }

    /// Waits for the last submit and returns its result (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read(&mut self) -> Result<TokenResult, GpuEngineError> {
        let want = self
            .pending
            .ok_or_else(|| GpuError::Readback("nothing was submitted".into()))?;
        self.staging
            .read(&self.ctx, self.result_bytes(want), &mut self.read_buf)?;
        let r = self.decode_result();
        self.pending = None;
        r
    }

    /// Awaits the last submit's result (the browser; the event loop drives the map).
    pub async fn read_async(&mut self) -> Result<TokenResult, GpuEngineError> {
        let want = self
            .pending
            .ok_or_else(|| GpuError::Readback("nothing was submitted".into()))?;
        self.staging
            .read_async(self.result_bytes(want), &mut self.read_buf)
            .await?;
        let r = self.decode_result();
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

    /// The prompt, one token per pass (the result is read only for the last).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn prefill(&mut self, tokens: &[u32], want: Want) -> Result<TokenResult, GpuEngineError> {
        self.submit_prefill(tokens, want)?;
        self.read()
    }

    /// Submits the prompt, one token per pass, leaving the last token's result to read back
    /// ([`GpuEngine::read`] or [`GpuEngine::read_async`]).
    pub fn submit_prefill(&mut self, tokens: &[u32], want: Want) -> Result<(), GpuEngineError> {
        let Some((last, rest)) = tokens.split_last() else {
            return Err(EngineError::EmptyPrompt.into());
        };
        if self.pos + tokens.len() > self.capacity {
            return Err(EngineError::ContextFull {
                needed: self.pos + tokens.len(),
                capacity: self.capacity,
            }
            .into());
        }
        for &t in rest {
            self.submit_prompt_token(t)?;
        }
        self.submit(*last, want)
    }

    /// Decodes `token` like [`GpuEngine::submit`], but times each kernel class: with GPU
    /// timestamps (one pass per dispatch, timestamps at its ends) where the adapter has
    /// `timestamp-query`, else one submit per dispatch timed on the CPU (submit → done).
    /// Returns seconds per class; the token's result is then read as usual.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn profile(&mut self, token: u32, want: Want) -> Result<Vec<(KernelClass, f64)>, GpuEngineError> {
        self.prepare(token, want)?;
        let n = self.dispatches.len();
        let mut secs = vec![0f64; n];
        if self.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
            let dev = &self.ctx.device;
            let set = dev.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("profile"),
                ty: wgpu::QueryType::Timestamp,
                count: (2 * n) as u32,
            });
            let resolve = dev.create_buffer(&wgpu::BufferDescriptor {
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
                self.record(&mut pass, d);
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
                    self.record(&mut pass, d);
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
        self.copy_result(&mut enc, want);
        self.ctx.queue.submit([enc.finish()]);
        self.pending = Some(want);
        self.pos += 1;
        let mut split: Vec<(KernelClass, f64)> = Vec::new();
        for (i, (d, s)) in self.dispatches.iter().zip(secs).enumerate() {
            // The last two dispatches are the head's matvec and its top-k.
            let class = d.class(i + 2 >= n);
            match split.iter_mut().find(|(c, _)| *c == class) {
                Some((_, t)) => *t += s,
                None => split.push((class, s)),
            }
        }
        Ok(split)
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

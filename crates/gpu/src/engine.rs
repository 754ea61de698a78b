//! The GPU executor of a [`ModelDesc`](tokscope_core::model::ModelDesc), decoding one token per
//! submit: every pipeline, buffer and bind group is made at load; a token writes its embedding
//! row, RoPE table and position (a few KB), records one compute pass and submits it once.
//!
//! First version: 12 dispatches per layer (RMSNorm, Q, K, V, RoPE + KV write, attention,
//! output projection with the residual add fused, RMSNorm, gate, up, SwiGLU, down with the
//! residual add fused) and the logits read back to the CPU for sampling. Fusing to ≤ 6 per
//! layer, argmax on the GPU, batched prefill and timestamps come next (issue #3).

use crate::matvec::{GpuMatrix, MatvecKernels};
use crate::repack::repack;
use crate::{GpuContext, GpuError};
use std::sync::Arc;
use tokscope_core::cpu::EngineError;
use tokscope_core::cpu::ops::rope_table;
use tokscope_core::model::{Model, Weight};
use wgpu::util::DeviceExt;

pub const OPS_SHADER: &str = include_str!("ops.wgsl");

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

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Step {
    pos: u32,
    len: u32,
    _pad: [u32; 2],
}

struct Ops {
    rms_norm: wgpu::ComputePipeline,
    rope_kv: wgpu::ComputePipeline,
    attention: wgpu::ComputePipeline,
    silu_mul: wgpu::ComputePipeline,
}

/// One dispatch, recorded per token: pipeline, bind group, workgroup count.
enum Dispatch {
    Matvec(usize, wgpu::BindGroup),
    Op(OpKind, wgpu::BindGroup, u32),
}

#[derive(Clone, Copy)]
enum OpKind {
    RmsNorm,
    RopeKv,
    Attention,
    SiluMul,
}

pub struct GpuEngine<B> {
    model: Arc<Model<B>>,
    pub ctx: Arc<GpuContext>,
    matvec: MatvecKernels,
    ops: Ops,
    matrices: Vec<GpuMatrix>,
    dispatches: Vec<Dispatch>,
    x: wgpu::Buffer,
    logits: wgpu::Buffer,
    rope: wgpu::Buffer,
    step: wgpu::Buffer,
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
    /// `progress(done, total)` is called with bytes uploaded.
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
        let pipeline = |entry: &str| ctx.pipeline(&module, entry);
        let ops = Ops {
            rms_norm: pipeline("rms_norm"),
            rope_kv: pipeline("rope_kv"),
            attention: pipeline("attention"),
            silu_mul: pipeline("silu_mul"),
        };
        let matvec = MatvecKernels::new(&ctx);
        let (d, qd, kvd, fd) = (c.d_model, c.q_dim(), c.kv_dim(), c.ffn_dim);
        let x = storage(&ctx, "x", d);
        let xn = storage(&ctx, "xn", d);
        let q = storage(&ctx, "q", qd);
        let k = storage(&ctx, "k", kvd);
        let v = storage(&ctx, "v", kvd);
        let att = storage(&ctx, "att", qd);
        let gate = storage(&ctx, "gate", fd);
        let up = storage(&ctx, "up", fd);
        let logits = storage(&ctx, "logits", c.vocab_size);
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
        let mut matrices = Vec::new();
        let mut upload =
            |w: &Weight, accumulate: bool, matrices: &mut Vec<GpuMatrix>| -> Result<usize, GpuEngineError> {
                let packed = repack(w.ty, w.rows, w.cols, model.data(w)).map_err(GpuError::from)?;
                matrices.push(GpuMatrix::upload_with(&ctx, &w.name, &packed, accumulate)?);
                done += w.n_bytes();
                progress(done, total);
                Ok(matrices.len() - 1)
            };
        let shape_buf = |cache_at: usize| {
            let s = Shape {
                d: d as u32,
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
        let mut dispatches = Vec::new();
        let mv = |m: usize, matrices: &[GpuMatrix], input: &wgpu::Buffer, output: &wgpu::Buffer| {
            Dispatch::Matvec(m, matvec.bind(&ctx, &matrices[m], input, output))
        };
        let ceil64 = |n: usize| (n as u32).div_ceil(64);
        for (li, l) in model.desc.layers.iter().enumerate() {
            let shape = shape_buf(li * capacity * kvd);
            let attn_norm = table(&model.dequantized(&l.attn_norm));
            let ffn_norm = table(&model.dequantized(&l.ffn_norm));
            let wq = upload(&l.wq, false, &mut matrices)?;
            let wk = upload(&l.wk, false, &mut matrices)?;
            let wv = upload(&l.wv, false, &mut matrices)?;
            let wo = upload(&l.wo, true, &mut matrices)?;
            let wg = upload(&l.w_gate, false, &mut matrices)?;
            let wu = upload(&l.w_up, false, &mut matrices)?;
            let wd = upload(&l.w_down, true, &mut matrices)?;
            dispatches.push(Dispatch::Op(
                OpKind::RmsNorm,
                bind(&ops.rms_norm, &[(0, &x), (2, &xn), (5, &shape), (7, &attn_norm)]),
                1,
            ));
            dispatches.push(mv(wq, &matrices, &xn, &q));
            dispatches.push(mv(wk, &matrices, &xn, &k));
            dispatches.push(mv(wv, &matrices, &xn, &v));
            let rope_bind = bind(
                &ops.rope_kv,
                &[
                    (0, &q),
                    (1, &k),
                    (2, &v),
                    (3, &kc),
                    (4, &vc),
                    (5, &shape),
                    (6, &step),
                    (7, &rope),
                ],
            );
            dispatches.push(Dispatch::Op(
                OpKind::RopeKv,
                rope_bind,
                ceil64(qd / 2 + kvd / 2).max(ceil64(kvd)),
            ));
            let att_bind = bind(
                &ops.attention,
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
            dispatches.push(Dispatch::Op(OpKind::Attention, att_bind, c.n_heads as u32));
            dispatches.push(mv(wo, &matrices, &att, &x));
            dispatches.push(Dispatch::Op(
                OpKind::RmsNorm,
                bind(&ops.rms_norm, &[(0, &x), (2, &xn), (5, &shape), (7, &ffn_norm)]),
                1,
            ));
            dispatches.push(mv(wg, &matrices, &xn, &gate));
            dispatches.push(mv(wu, &matrices, &xn, &up));
            dispatches.push(Dispatch::Op(
                OpKind::SiluMul,
                bind(&ops.silu_mul, &[(0, &gate), (1, &up), (5, &shape)]),
                ceil64(fd),
            ));
            dispatches.push(mv(wd, &matrices, &gate, &x));
        }
        let shape = shape_buf(0);
        let out_norm = table(&model.dequantized(&model.desc.output_norm));
        dispatches.push(Dispatch::Op(
            OpKind::RmsNorm,
            bind(&ops.rms_norm, &[(0, &x), (2, &xn), (5, &shape), (7, &out_norm)]),
            1,
        ));
        let head = upload(&model.desc.output, false, &mut matrices)?;
        dispatches.push(mv(head, &matrices, &xn, &logits));
        Ok(Self {
            inv_freq: model.rope_inv_freq(),
            embed_row: vec![0.0; d],
            cos_sin: vec![0.0; c.head_dim],
            model,
            ctx,
            matvec,
            ops,
            matrices,
            dispatches,
            x,
            logits,
            rope,
            step,
            capacity,
            pos: 0,
        })
    }

    /// The buffer holding the last token's logits (vocabulary-many f32).
    pub fn logits_buffer(&self) -> &wgpu::Buffer {
        &self.logits
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

    /// Records and submits one token's pass without waiting; the logits are then in the GPU's
    /// logits buffer (native [`GpuEngine::decode`] reads them back; the browser awaits a map).
    pub fn submit(&mut self, token: u32) -> Result<(), GpuEngineError> {
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
            _pad: [0; 2],
        };
        q.write_buffer(&self.step, 0, bytemuck::bytes_of(&step));
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for d in &self.dispatches {
                match d {
                    Dispatch::Matvec(m, bind) => self.matvec.encode(&mut pass, &self.matrices[*m], bind),
                    Dispatch::Op(kind, bind, groups) => {
                        pass.set_pipeline(match kind {
                            OpKind::RmsNorm => &self.ops.rms_norm,
                            OpKind::RopeKv => &self.ops.rope_kv,
                            OpKind::Attention => &self.ops.attention,
                            OpKind::SiluMul => &self.ops.silu_mul,
                        });
                        pass.set_bind_group(0, bind, &[]);
                        pass.dispatch_workgroups(*groups, 1, 1);
                    }
                }
            }
        }
        q.submit([enc.finish()]);
        self.pos += 1;
        Ok(())
    }

    /// Appends one token and returns the logits for the next (read back: the first version
    /// samples on the CPU).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn decode(&mut self, token: u32) -> Result<Vec<f32>, GpuEngineError> {
        self.submit(token)?;
        Ok(crate::readback::read_f32(
            &self.ctx,
            &self.logits,
            self.model.config.vocab_size,
        )?)
    }

    /// The prompt, one token per pass for now (tiled prefill comes with issue #3).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn prefill(&mut self, tokens: &[u32]) -> Result<Vec<f32>, GpuEngineError> {
        let Some((last, rest)) = tokens.split_last() else {
            return Err(EngineError::EmptyPrompt.into());
        };
        for &t in rest {
            self.submit(t)?;
        }
        self.decode(*last)
    }
}

//! The model's weights on the GPU, the first of the engine's three parts (weights; the graph of
//! dispatches, graph.rs; the sequences' state, sequences.rs): every matrix repacked and uploaded
//! once, with the norms' gains and biases as f32 tables. Engines of any batch size share one
//! `Weights`, so the batch dial makes new state over them and uploads nothing.

use crate::fused::fuse;
use crate::matvec::{GpuMatrix, row_slices};
use crate::repack::repack;
use crate::{GpuContext, GpuError};
use std::ops::Range;
use tokscope_core::model::{LayerDesc, Model, Weight};
use tokscope_core::quant::GgmlType;

/// One layer's weights.
pub struct LayerWeights {
    pub attn_norm: wgpu::Buffer,
    pub ffn_norm: wgpu::Buffer,
    /// Q, K and V stacked into one matrix where they share a type, else one each.
    pub qkv: Vec<GpuMatrix>,
    pub wo: GpuMatrix,
    /// Gate and up, rows interleaved.
    pub gate_up: GpuMatrix,
    pub down: GpuMatrix,
    /// The Q/K/V step's head norms (Q's then K's) and biases (Q, K, V), where the engine runs
    /// that step (families other than llama); a one-value placeholder where the family has none
    /// (wgpu refuses empty bindings).
    pub qk_norm: Option<wgpu::Buffer>,
    pub qkv_bias: Option<wgpu::Buffer>,
    /// Gemma 3's post-norms after the output and the down projections.
    pub post_attn_norm: Option<wgpu::Buffer>,
    pub post_ffn_norm: Option<wgpu::Buffer>,
}

pub struct Weights {
    pub layers: Vec<LayerWeights>,
    pub output_norm: wgpu::Buffer,
    /// The output head in row slices that each fit one binding (a 128k or 262k vocabulary can
    /// exceed a device's 128 MiB): the rows each slice holds, and the slice.
    pub head: Vec<(Range<usize>, GpuMatrix)>,
    /// The token embedding in the same row slices, for the lookup on the GPU (embed.rs): the
    /// head's own slices where it is tied to the embedding (nothing uploaded twice), else its
    /// own upload; empty where its type has no lookup kernel (the host then writes the rows).
    embedding: Vec<(Range<usize>, GpuMatrix)>,
}

/// Whether a layer's Q, K and V share a type, so one stacked matrix can hold them (Q4_K_M files
/// give V more bits: three matrices, no re-encoding).
pub fn one_type(l: &LayerDesc) -> bool {
    l.wq.ty == l.wk.ty && l.wk.ty == l.wv.ty
}

/// A norm's gain (or a bias) as an f32 storage table.
fn table(ctx: &GpuContext, data: &[f32]) -> wgpu::Buffer {
    ctx.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("norm weight"),
        contents: bytemuck::cast_slice(if data.is_empty() { &[0.0] } else { data }),
        usage: wgpu::BufferUsages::STORAGE,
    })
}

impl Weights {
    /// Repacks every matrix for the matvec's row groups of `group` rows and uploads it;
    /// `qkv_post`: the engine runs the separate Q/K/V step, which reads head norms and biases.
    /// `progress(done, total)` is called with weight bytes uploaded.
    pub fn upload<B: AsRef<[u8]>>(
        ctx: &GpuContext,
        model: &Model<B>,
        group: usize,
        qkv_post: bool,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<Self, GpuError> {
        let total: u64 = model.desc.weights().iter().map(|w| w.n_bytes()).sum();
        let mut done = 0u64;
        // Repacks rows `rows` of a (fused) matrix and uploads them, counting their bytes done.
        let mut put = |name: &str, ty: GgmlType, cols: usize, bytes: &[u8], rows: Range<usize>| {
            let row_bytes = ty.bytes_for(cols as u64).expect("whole blocks") as usize;
            let part = &bytes[rows.start * row_bytes..rows.end * row_bytes];
            let packed = repack(ty, rows.len(), cols, part, group)?;
            let m = GpuMatrix::upload(ctx, name, &packed)?;
            done += part.len() as u64;
            progress(done.min(total), total);
            Ok::<_, GpuError>(m)
        };
        let mut upload = |name: &str, parts: &[&Weight], interleave: bool| {
            let (ty, bytes) = fuse(model, parts, interleave);
            let rows = parts.iter().map(|w| w.rows).sum();
            put(name, ty, parts[0].cols, &bytes, 0..rows)
        };
        let gains = |w: &Option<Weight>| w.as_ref().map(|w| model.dequantized(w)).unwrap_or_default();
        let mut layers = Vec::with_capacity(model.desc.layers.len());
        for (li, l) in model.desc.layers.iter().enumerate() {
            let qkv = match one_type(l) {
                true => vec![upload(&format!("blk.{li}.attn_qkv"), &[&l.wq, &l.wk, &l.wv], false)?],
                false => vec![
                    upload(&l.wq.name, &[&l.wq], false)?,
                    upload(&l.wk.name, &[&l.wk], false)?,
                    upload(&l.wv.name, &[&l.wv], false)?,
                ],
            };
            let (qk_norm, qkv_bias) = match qkv_post {
                true => {
                    let mut g = gains(&l.q_norm);
                    g.extend(gains(&l.k_norm));
                    let mut b = gains(&l.bq);
                    b.extend(gains(&l.bk));
                    b.extend(gains(&l.bv));
                    (Some(table(ctx, &g)), Some(table(ctx, &b)))
                }
                false => (None, None),
            };
            let post = |w: &Option<Weight>| w.as_ref().map(|w| table(ctx, &model.dequantized(w)));
            layers.push(LayerWeights {
                attn_norm: table(ctx, &model.dequantized(&l.attn_norm)),
                ffn_norm: table(ctx, &model.dequantized(&l.ffn_norm)),
                qkv,
                wo: upload(&l.wo.name, &[&l.wo], false)?,
                gate_up: upload(&format!("blk.{li}.ffn_gate_up"), &[&l.w_gate, &l.w_up], true)?,
                down: upload(&l.w_down.name, &[&l.w_down], false)?,
                qk_norm,
                qkv_bias,
                post_attn_norm: post(&l.post_attn_norm),
                post_ffn_norm: post(&l.post_ffn_norm),
            });
        }
        let limit = ctx
            .limits
            .max_storage_buffer_binding_size
            .min(ctx.limits.max_buffer_size);
        // A matrix in row slices that each fit one binding.
        let mut sliced = |w: &Weight| {
            let (ty, bytes) = fuse(model, &[w], false);
            let row_bytes = ty.bytes_for(w.cols as u64).expect("whole blocks") as usize;
            let slices = row_slices(w.rows, row_bytes, group, limit);
            let mut out = Vec::with_capacity(slices.len());
            for rows in slices.iter().cloned() {
                let name = match slices.len() {
                    1 => w.name.clone(),
                    _ => format!("{} rows {}..{}", w.name, rows.start, rows.end),
                };
                out.push((rows.clone(), put(&name, ty, w.cols, &bytes, rows)?));
            }
            Ok::<_, GpuError>(out)
        };
        let head = sliced(&model.desc.output)?;
        let embd = &model.desc.token_embd;
        let embedding = match crate::embed::kernel_type(embd.ty) {
            Some(_) if !model.desc.tied_output => sliced(embd)?,
            _ => Vec::new(),
        };
        Ok(Self {
            layers,
            output_norm: table(ctx, &model.dequantized(&model.desc.output_norm)),
            head,
            embedding,
        })
    }

    /// The token embedding's row slices on the GPU, where the lookup runs there (embed.rs).
    pub fn embedding<B: AsRef<[u8]>>(&self, model: &Model<B>) -> Option<&[(Range<usize>, GpuMatrix)]> {
        crate::embed::kernel_type(model.desc.token_embd.ty)?;
        Some(match model.desc.tied_output {
            true => &self.head,
            false => &self.embedding,
        })
    }
}

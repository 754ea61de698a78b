//! Fused dequantize × matrix-vector kernels (matvec.wgsl), one entry point per weight type, the
//! weights they read (uploaded once), and what each call fuses around the product: the RMSNorm
//! of its input and an epilogue (store, residual add, RoPE + KV-cache write, SwiGLU). One call
//! multiplies by up to [`MAX_COLUMNS`] input vectors (prefill chunks, batched decode), each
//! weight word serving `Shape::cols` of them once loaded.

use crate::repack::Packed;
use crate::{GpuContext, GpuError};
use std::collections::HashMap;
use tokscope_core::quant::GgmlType;

pub const SHADER: &str = crate::wgsl!("matvec.wgsl");
/// f16 rounding and the KV cache's packing, shared by matvec.wgsl and ops.wgsl.
pub const HALF: &str = crate::wgsl!("half.wgsl");

/// What matvec.wgsl needs in front of it where the adapter has subgroups: the sum over a row
/// group's lanes by shuffles (`subgroupShuffleXor`, a butterfly of log2(LANES) steps).
/// Browsers require `enable subgroups;` before it; naga 30 rejects that directive (not yet
/// implemented) and takes the builtins without it, so it is added in the browser only.
const WITH_SUBGROUPS: &str = "const SUBGROUPS: bool = true;
fn lane_sum(v: f32) -> f32 {
    var s = v;
    for (var m = LANES / 2u; m > 0u; m = m >> 1u) {
        s += subgroupShuffleXor(s, m);
    }
    return s;
}
";

/// ... and where it has none: the lanes sum through workgroup memory (`finish`).
const WITHOUT_SUBGROUPS: &str = "const SUBGROUPS: bool = false;
fn lane_sum(v: f32) -> f32 {
    return v;
}
";

/// matvec.wgsl as compiled: with the subgroup lane sum or without.
pub fn source(subgroups: bool) -> String {
    let enable = if subgroups && cfg!(target_arch = "wasm32") {
        "enable subgroups;\n"
    } else {
        ""
    };
    let prelude = if subgroups { WITH_SUBGROUPS } else { WITHOUT_SUBGROUPS };
    format!("{enable}{prelude}{HALF}{SHADER}")
}

/// Whether `shape`'s lanes can sum by subgroup shuffles on this adapter: it offers subgroups,
/// and its smallest subgroup holds a whole row group.
pub fn subgroups_for(ctx: &GpuContext, shape: Shape) -> bool {
    shape.lanes > 1 && ctx.features.contains(wgpu::Features::SUBGROUP) && ctx.info.subgroup_min_size >= shape.lanes
}
/// The most input values a column tile (several columns per workgroup) stages, all its columns
/// together (matvec.wgsl's `MAX_COLS`: its arrays' default lengths); one column may stage up to
/// [`widest_row`].
pub const MAX_COLS: usize = 8192;
/// The widest quantized row a one-column matvec stages on a device with `workgroup_bytes` of
/// workgroup memory: an int8 per value and two f32 per block of 32 (1.25 bytes a value) beside
/// `red`. WebGPU guarantees 16 KiB (11,456 values); GPUs offer 32–64 KiB, enough for Llama
/// 3.1 8B's 14,336-wide down projection (column tiles stay within [`MAX_COLS`]).
pub fn widest_row(workgroup_bytes: u32) -> usize {
    let bytes = (workgroup_bytes as usize).saturating_sub(RED_FLOATS as usize * 4);
    bytes * 4 / 5 / 32 * 32
}

/// Workgroups a matrix spreads over on a GPU where it has the rows: two for each SM of the
/// biggest GPUs this field runs on (H100 and H200: 132 SMs; RTX 4090: 128), so one workgroup's
/// memory waits overlap another's on every SM. A GPU with fewer SMs runs them in turns, each as
/// short as the rows it holds.
pub const MIN_GPU_WORKGROUPS: u32 = 256;

/// Columns (tokens) one pass computes at most: a prefill chunk, or one token of each sequence
/// (matvec.wgsl's and ops.wgsl's `MAX_N`).
pub const MAX_COLUMNS: usize = 32;
/// Columns one workgroup computes at most (matvec.wgsl's `MAX_NC`).
const MAX_NC: u32 = 8;
/// Floats of matvec.wgsl's `red`, which holds WG × R × NC partial sums when LANES > 1.
const RED_FLOATS: u32 = 512;

/// The weight types the GPU kernels run: those of `GgmlType::SUPPORTED` with a kernel.
pub fn gpu_types() -> Vec<GgmlType> {
    GgmlType::SUPPORTED
        .into_iter()
        .filter(|t| entry_point(*t).is_some())
        .collect()
}

pub fn entry_point(ty: GgmlType) -> Option<&'static str> {
    Some(match ty {
        GgmlType::F32 => "matvec_f32",
        GgmlType::F16 => "matvec_f16",
        GgmlType::BF16 => "matvec_bf16",
        GgmlType::Q8_0 => "matvec_q8_0",
        GgmlType::Q4_0 => "matvec_q4_0",
        GgmlType::Q4_1 => "matvec_q4_1",
        GgmlType::Q5_0 => "matvec_q5_0",
        GgmlType::Q5_1 => "matvec_q5_1",
        GgmlType::Q4_K => "matvec_q4_k",
        GgmlType::Q5_K => "matvec_q5_k",
        GgmlType::Q3_K => "matvec_q3_k",
        GgmlType::Q2_K => "matvec_q2_k",
        GgmlType::Q6_K => "matvec_q6_k",
        _ => return None,
    })
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    scales_at: u32,
    mode: u32,
    norm: u32,
    eps: f32,
    q_rows: u32,
    kv_rows: u32,
    head_dim: u32,
    cache_at: u32,
    quantized: u32,
    head: u32,
    max_splits: u32,
    ml_at: u32,
    y_rows: u32,
    y_at: u32,
    qh_at: u32,
    _pad: [u32; 3],
}

/// The per-pass uniform every kernel reads: its columns (tokens), where each one's K and V go
/// and what it attends to, which columns the output head computes, and the candidates wanted.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Step {
    /// Candidates top-k returns per column.
    pub k: u32,
    /// Columns in this pass.
    pub n: u32,
    /// The first column the output head computes (the head's column j writes its logits at
    /// `(j - head_from) × vocabulary`).
    pub head_from: u32,
    /// Attention's shares per (column, head): ops.wgsl's workgroups along y.
    pub splits: u32,
    /// Per column: (cache row = sequence × capacity + position, position, the sequence's first
    /// cache row, 0).
    pub cols: [[u32; 4]; MAX_COLUMNS],
}

impl Step {
    /// `n` columns of one sequence at positions 0, 1, … (tests and benchmarks of one call).
    pub fn first(n: usize) -> Step {
        let mut s = bytemuck::Zeroable::zeroed();
        let Step {
            n: count, cols, splits, ..
        } = &mut s;
        *count = n as u32;
        *splits = 1;
        for (j, c) in cols.iter_mut().take(n).enumerate() {
            *c = [j as u32, j as u32, 0, 0];
        }
        s
    }
}

/// A weight matrix on the GPU.
pub struct GpuMatrix {
    pub name: String,
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub weights: wgpu::Buffer,
    pub(crate) scales_at: usize,
    pub(crate) qh_at: usize,
    /// Rows interleaved per tile group (repack.rs); must be the kernels' `Shape::rows`.
    pub(crate) group: usize,
}

impl GpuMatrix {
    pub fn upload(ctx: &GpuContext, name: &str, packed: &Packed) -> Result<Self, GpuError> {
        ctx.check_binding(name, packed.n_bytes())?;
        let widest = widest_row(ctx.limits.max_compute_workgroup_storage_size);
        if packed.ty.is_quantized() && packed.cols > widest {
            return Err(GpuError::TooWide {
                tensor: name.into(),
                cols: packed.cols,
                max: widest,
            });
        }
        // Whole 16-byte words, for the kernels' vec4 view of the same buffer.
        let bytes: &[u8] = bytemuck::cast_slice(&packed.words);
        let weights = ctx.upload(
            &wgpu::util::BufferInitDescriptor {
                label: Some(name),
                contents: bytes,
                usage: wgpu::BufferUsages::STORAGE,
            },
            (bytes.len() as u64).next_multiple_of(16),
        )?;
        Ok(Self {
            name: name.to_string(),
            ty: packed.ty,
            rows: packed.rows,
            cols: packed.cols,
            weights,
            scales_at: packed.scales_at,
            qh_at: packed.qh_at,
            group: packed.group,
        })
    }
}

/// What a matvec call does with its result.
pub enum Epilogue<'a> {
    /// `y = W·x`.
    Store,
    /// `y += W·x`: the residual add fused into the projection that produces it.
    Add,
    /// Rows are Q, K, V stacked: Q is rotated into `y`, K rotated and V copied into this
    /// position's row of the caches (`step.pos`), RoPE fused with the KV-cache write.
    RopeKv {
        q_rows: usize,
        kv_rows: usize,
        head_dim: usize,
        cache_at: usize,
        k_cache: &'a wgpu::Buffer,
        v_cache: &'a wgpu::Buffer,
        rope: &'a wgpu::Buffer,
    },
    /// Rows are gate and up interleaved: `y[i] = silu(row 2i) · row 2i+1`.
    SwiGlu,
    /// As SwiGlu with GELU (tanh form, at f16 like ggml's CPU backend): gemma3.
    GeGlu,
}

/// One matvec call's inputs and outputs.
pub struct MatvecIo<'a> {
    pub x: &'a wgpu::Buffer,
    pub y: &'a wgpu::Buffer,
    /// RMSNorm the input first, with this weight and epsilon.
    pub norm: Option<(&'a wgpu::Buffer, f32)>,
    pub epilogue: Epilogue<'a>,
    pub step: &'a wgpu::Buffer,
    /// The output head: only the pass's columns from `Step::head_from`.
    pub head: bool,
    /// `x` holds attention's partial shares, combined as the input is staged.
    pub combine: Option<Shares>,
    /// `(first row, rows of the whole output)` when the matrix is a row slice of a larger one
    /// (an output head too big for one binding): its rows land at that offset of each column.
    pub out_rows: Option<(usize, usize)>,
}

/// Row ranges of a `rows` × `row_bytes` matrix, each a whole number of `group`-row groups whose
/// repacked bytes fit one binding of `limit` bytes: the slices an output head too big for one
/// binding is split into (one dispatch each), where the buffer itself would fit.
pub fn row_slices(rows: usize, row_bytes: usize, group: usize, limit: u64) -> Vec<std::ops::Range<usize>> {
    // Repacking pads the last group to `group` rows and the words to 16 bytes.
    let room = (limit as usize).saturating_sub(group * row_bytes + 16);
    let per = (room / row_bytes.max(1) / group * group).max(group);
    (0..rows).step_by(per).map(|a| a..(a + per).min(rows)).collect()
}

/// Where attention leaves its partial shares (ops.wgsl's `attention`): per (column, head),
/// `max_splits` records of `head_dim` unnormalised outputs, then from vec4 `ml_at` on one
/// (max, sum, 0, 0) per record.
#[derive(Clone, Copy, Debug)]
pub struct Shares {
    pub head_dim: usize,
    pub max_splits: usize,
    pub ml_at: usize,
}

/// A recorded-once matvec dispatch.
pub struct MatvecCall {
    ty: GgmlType,
    /// The kernels' shape for this matrix's rows ([`Shape::for_rows`]).
    shape: Shape,
    rows: usize,
    /// The matrix's width (input values per column): its pipelines' workgroup arrays fit it.
    width: usize,
    /// Columns per workgroup when a pass has more than one.
    cols: u32,
    /// Its input is attention's shares.
    combine: bool,
    bind: wgpu::BindGroup,
}

/// How the kernels split the work (matvec.wgsl's overrides): `lanes` invocations share `rows`
/// consecutive rows; `workgroup` invocations per workgroup; up to `cols` columns (tokens) per
/// workgroup when a pass has several (each weight word, once loaded, serves them all).
/// A matrix too short for `min_workgroups` workgroups of `workgroup` takes narrower ones
/// ([`Shape::for_rows`]); 0 never narrows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub lanes: u32,
    pub rows: u32,
    pub workgroup: u32,
    pub cols: u32,
    pub min_workgroups: u32,
}

impl Shape {
    /// CPU-backed adapters (lavapipe, SwiftShader), where an invocation is a SIMD lane: one lane
    /// per row group (no cross-lane sums, which cost barriers), 8 rows each so every activation
    /// load serves 8 rows, 16 per workgroup so the layers' 576-row matrices still make several
    /// workgroups for the CPU's threads. Measured on lavapipe (examples/mvexp.rs, Q8_0 49152×576):
    /// 1 row per invocation 1.45 GB/s, 4 rows 3.4 GB/s, 8 rows 4.05 GB/s. With the row groups
    /// interleaved (repack.rs) and 16-byte input loads, examples/mvbench.rs still ranks this
    /// shape first (2 or 16 lanes per row group, or 4 rows, were slower, cold and cached).
    pub const CPU: Shape = Shape {
        lanes: 1,
        rows: 8,
        workgroup: 16,
        cols: 4,
        min_workgroups: 0,
    };
    /// GPUs: 16 lanes read a row pair's blocks side by side, 2 rows each (the RoPE/SwiGLU pair).
    /// A layer's 576-row matrices (SmolLM2's output and down projections) made 72 workgroups of
    /// 8 rows, which leaves most of a big GPU's 132 SMs idle at batch 1: those take workgroups of
    /// one row pair instead (288), so every matrix spreads over [`MIN_GPU_WORKGROUPS`] where it
    /// has the rows. Narrower workgroups, not split-K: each row's sum stays in one workgroup, so
    /// there is no second pass and no float atomics (whose order would change the sums run to
    /// run). Split-K would add workgroups only to matrices under 2 × [`MIN_GPU_WORKGROUPS`] rows:
    /// in the supported models, K and V alone, where their type differs from Q's (Q4_K_M files;
    /// 192 or 256 rows, a small share of a layer's bytes), otherwise stacked with Q.
    pub const GPU: Shape = Shape {
        lanes: 16,
        rows: 2,
        workgroup: 64,
        cols: 4,
        min_workgroups: MIN_GPU_WORKGROUPS,
    };

    pub fn for_device(device_type: wgpu::DeviceType) -> Shape {
        match device_type {
            wgpu::DeviceType::Cpu => Shape::CPU,
            _ => Shape::GPU,
        }
    }

    /// This shape for a matrix of `rows`: the workgroup halved (down to one row group) while it
    /// would make fewer than `min_workgroups` workgroups.
    pub fn for_rows(&self, rows: usize) -> Shape {
        let mut s = *self;
        while s.workgroup > s.lanes && (rows as u32).div_ceil(s.rows_per_workgroup()) < s.min_workgroups {
            s.workgroup /= 2;
        }
        s
    }

    /// Rows one workgroup computes.
    pub fn rows_per_workgroup(&self) -> u32 {
        self.workgroup / self.lanes * self.rows
    }

    /// Columns per workgroup for a matrix `cols` wide in a pass of several: at most
    /// `self.cols`, halved until that many staged inputs fit workgroup memory (and their partial
    /// sums fit `red` when lanes share rows). 1 when even two do not fit.
    pub fn cols_for(&self, width: usize) -> u32 {
        let mut nc = self.cols;
        while nc > 1
            && (nc as usize * width > MAX_COLS || (self.lanes > 1 && self.workgroup * self.rows * nc > RED_FLOATS))
        {
            nc /= 2;
        }
        nc
    }

    /// matvec.wgsl's workgroup array lengths (`XQ_LEN`, `XB_LEN`, `RED_LEN`) for `nc` columns of
    /// a matrix `width` wide: only what the pipeline stages, since a browser zeroes them all in
    /// every workgroup. Float matrices stage nothing (1: WGSL arrays are never empty).
    pub fn workgroup_lengths(&self, ty: GgmlType, nc: u32, width: usize) -> [u32; 3] {
        let staged = if ty.is_quantized() { nc * width as u32 } else { 0 };
        let partials = if self.lanes > 1 {
            self.workgroup * self.rows * nc
        } else {
            0
        };
        [(staged / 16).max(1), (staged / 32).max(1), self.workgroup.max(partials)]
    }

    fn check(&self) {
        let ok = self.lanes.is_power_of_two()
            && self.workgroup.is_power_of_two()
            && self.lanes <= self.workgroup
            && self.workgroup <= 64
            && [2, 4, 8].contains(&self.rows)
            && self.cols.is_power_of_two()
            && self.cols <= MAX_NC
            && (self.lanes == 1 || self.workgroup * self.rows <= RED_FLOATS);
        assert!(ok, "matvec shape {self:?}");
    }
}

/// A pipeline's specialisation: weight type, columns per workgroup, matrix width, whether its
/// input is attention's shares to combine, and its invocations per workgroup.
type PipelineKey = (GgmlType, u32, usize, bool, u32);

/// The matvec pipelines, compiled at load for the types and column counts the bound matrices
/// need.
pub struct MatvecKernels {
    pipelines: HashMap<PipelineKey, wgpu::ComputePipeline>,
    module: wgpu::ShaderModule,
    pipeline_layout: wgpu::PipelineLayout,
    layout: wgpu::BindGroupLayout,
    max_per_dim: u32,
    shape: Shape,
    // Stand-ins for the bindings an epilogue does not use (writable bindings must not alias).
    unused: [wgpu::Buffer; 3],
}

/// matvec.wgsl's bindings, one layout for every entry point (each reads only some of them).
fn bind_group_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    use wgpu::BufferBindingType::{Storage, Uniform};
    let kinds = [
        Storage { read_only: true },  // w
        Storage { read_only: true },  // x
        Storage { read_only: false }, // y
        Uniform,                      // params
        Storage { read_only: true },  // g
        Storage { read_only: false }, // k cache
        Storage { read_only: false }, // v cache
        Storage { read_only: true },  // rope
        Uniform,                      // step
        Storage { read_only: true },  // w4
    ];
    let entries: Vec<wgpu::BindGroupLayoutEntry> = kinds
        .into_iter()
        .enumerate()
        .map(|(i, ty)| wgpu::BindGroupLayoutEntry {
            binding: i as u32,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("matvec"),
        entries: &entries,
    })
}

/// Columns per workgroup for a pass of `n`: the matrix's tile width `cols` (a power of two), or
/// the power of two that covers `n` when that is smaller. A workgroup computes all its columns
/// whether they exist or not (the extra ones repeat the last), so two sequences in 4-wide tiles
/// did twice the work: on CPU adapters, where the kernels are compute-bound, batch 2 decoded
/// slower in aggregate than batch 1 (lavapipe 11.1 against 17.9 tok/s).
pub fn columns_per_workgroup(cols: u32, n: usize) -> u32 {
    cols.min((n.max(1) as u32).next_power_of_two())
}

/// Workgroups for `rows` (of one column tile), folded into two dimensions past the
/// per-dimension limit.
pub fn dispatch_size(rows: usize, shape: Shape, max_per_dim: u32) -> (u32, u32) {
    let groups = (rows as u32).div_ceil(shape.rows_per_workgroup());
    if groups <= max_per_dim {
        (groups, 1)
    } else {
        (max_per_dim, groups.div_ceil(max_per_dim))
    }
}

impl MatvecKernels {
    pub fn new(ctx: &GpuContext) -> Self {
        Self::with_shape(ctx, Shape::for_device(ctx.kind))
    }

    /// How these kernels split the work; matrices are packed for its `rows` (repack.rs).
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Kernels for `shape`, summing lanes by subgroup shuffles where the adapter allows.
    pub fn with_shape(ctx: &GpuContext, shape: Shape) -> Self {
        Self::with_options(ctx, shape, subgroups_for(ctx, shape))
    }

    /// [`MatvecKernels::with_shape`] with the lane sum chosen (`subgroups` only where
    /// [`subgroups_for`] allows it; tests compare both paths).
    pub fn with_options(ctx: &GpuContext, shape: Shape, subgroups: bool) -> Self {
        shape.check();
        assert!(!subgroups || subgroups_for(ctx, shape), "subgroups for {shape:?}");
        let module = ctx.shader("matvec.wgsl", &source(subgroups));
        let layout = bind_group_layout(&ctx.device);
        let pipeline_layout = ctx.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("matvec"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let unused = std::array::from_fn(|_| {
            ctx.create_buffer(&wgpu::BufferDescriptor {
                label: Some("unused binding"),
                size: 16,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        });
        Self {
            pipelines: HashMap::new(),
            module,
            pipeline_layout,
            layout,
            max_per_dim: ctx.limits.max_compute_workgroups_per_dimension,
            shape,
            unused,
        }
    }

    /// Compiles the kernel for `key`, once.
    fn ensure(&mut self, ctx: &GpuContext, key: PipelineKey) {
        let (module, layout) = (&self.module, &self.pipeline_layout);
        let (ty, nc, width, combine, workgroup) = key;
        let shape = Shape {
            workgroup,
            ..self.shape
        };
        self.pipelines.entry(key).or_insert_with(|| {
            let entry = entry_point(ty).expect("every supported type has a kernel");
            let [xq, xb, red] = shape.workgroup_lengths(ty, nc, width);
            let constants = [
                ("LANES", shape.lanes as f64),
                ("R", shape.rows as f64),
                ("WG", shape.workgroup as f64),
                ("NC", nc as f64),
                ("XQ_LEN", xq as f64),
                ("XB_LEN", xb as f64),
                ("RED_LEN", red as f64),
                ("COMBINE", combine as u8 as f64),
            ];
            // matvec.wgsl writes each workgroup variable before any read of it (stage's
            // blocks < NC · cols / 32, every lane's slots of `red`), so the zeroing is skipped.
            ctx.pipeline_in(Some(layout), module, entry, &constants, false)
        });
    }

    /// Binds `m` for one call; made once at load, reused every token. `io.head`: the output
    /// head, which computes only the pass's columns from `Step::head_from`.
    pub fn bind(&mut self, ctx: &GpuContext, m: &GpuMatrix, io: MatvecIo) -> MatvecCall {
        let shape = self.shape.for_rows(m.rows);
        let cols = shape.cols_for(m.cols);
        let combine = io.combine.is_some();
        for nc in (0..=cols.ilog2()).map(|i| 1 << i) {
            self.ensure(ctx, (m.ty, nc, m.cols, combine, shape.workgroup));
        }
        let [unused_g, unused_k, unused_v] = &self.unused;
        let (mode, q_rows, kv_rows, head_dim, cache_at) = match &io.epilogue {
            Epilogue::Store => (0, 0, 0, 0, 0),
            Epilogue::Add => (1, 0, 0, 0, 0),
            Epilogue::RopeKv {
                q_rows,
                kv_rows,
                head_dim,
                cache_at,
                ..
            } => (2, *q_rows, *kv_rows, *head_dim, *cache_at),
            Epilogue::SwiGlu => (3, 0, 0, 0, 0),
            Epilogue::GeGlu => (4, 0, 0, 0, 0),
        };
        let (k_cache, v_cache, rope) = match &io.epilogue {
            Epilogue::RopeKv {
                k_cache, v_cache, rope, ..
            } => (*k_cache, *v_cache, *rope),
            _ => (unused_k, unused_v, unused_g),
        };
        let params = Params {
            rows: m.rows as u32,
            cols: m.cols as u32,
            scales_at: m.scales_at as u32,
            mode,
            norm: io.norm.is_some() as u32,
            eps: io.norm.map_or(0.0, |(_, eps)| eps),
            q_rows: q_rows as u32,
            kv_rows: kv_rows as u32,
            head_dim: io.combine.map_or(head_dim, |c| c.head_dim) as u32,
            cache_at: cache_at as u32,
            // 2: the K-quants' inputs rounded as Q8_K (one scale per 256), as the CPU does.
            quantized: match m.ty.block_size() {
                1 => 0,
                256 => 2,
                _ => 1,
            },
            head: io.head as u32,
            max_splits: io.combine.map_or(0, |c| c.max_splits as u32),
            ml_at: io.combine.map_or(0, |c| c.ml_at as u32),
            y_rows: io.out_rows.map_or(m.rows, |(_, of)| of) as u32,
            y_at: io.out_rows.map_or(0, |(at, _)| at) as u32,
            qh_at: m.qh_at as u32,
            _pad: [0; 3],
        };
        let params = ctx.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("matvec params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let norm = io.norm.map_or(unused_g, |(g, _)| g);
        assert_eq!(
            m.group, self.shape.rows as usize,
            "{} was packed for another matvec shape",
            m.name
        );
        // Binding 9: `w4`, the same (read-only) buffer seen 16 bytes at a time.
        let buffers = [
            &m.weights, io.x, io.y, &params, norm, k_cache, v_cache, rope, io.step, &m.weights,
        ];
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(&m.name),
            layout: &self.layout,
            entries: &entries,
        });
        MatvecCall {
            ty: m.ty,
            shape,
            rows: m.rows,
            width: m.cols,
            cols,
            combine,
            bind,
        }
    }

    /// Records one matvec dispatch into `pass` for `n` columns (the pass's `Step::n`, less
    /// `head_from` for the head): one column runs the one-token kernel, more the column tiles.
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>, call: &MatvecCall, n: usize) {
        let nc = columns_per_workgroup(call.cols, n);
        let key = (call.ty, nc, call.width, call.combine, call.shape.workgroup);
        pass.set_pipeline(&self.pipelines[&key]);
        pass.set_bind_group(0, &call.bind, &[]);
        let (x, y) = dispatch_size(call.rows, call.shape, self.max_per_dim);
        pass.dispatch_workgroups(x, y, (n as u32).div_ceil(nc));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_per_workgroup_fit_workgroup_memory() {
        assert_eq!(Shape::CPU.cols_for(576), 4);
        assert_eq!(Shape::CPU.cols_for(1536), 4);
        assert_eq!(Shape::CPU.cols_for(4096), 2);
        assert_eq!(Shape::CPU.cols_for(8192), 1);
        // 64 × 2 × 4 partial sums fill `red` exactly.
        assert_eq!(Shape::GPU.cols_for(576), 4);
        let wide = Shape { cols: 8, ..Shape::GPU };
        assert_eq!(wide.cols_for(576), 4);
    }

    /// The shaders' MAX_N is MAX_COLUMNS (a WGSL array length cannot be an override).
    #[test]
    fn shaders_agree_on_max_columns() {
        let line = format!("const MAX_N: u32 = {MAX_COLUMNS}u;");
        assert!(SHADER.contains(&line));
        assert!(crate::engine::OPS_SHADER.contains(&line));
        assert_eq!(std::mem::size_of::<Step>(), 16 + 16 * MAX_COLUMNS);
    }

    /// Each pipeline's workgroup arrays hold what it stages and no more: one token of a
    /// 576-wide Q4_1 matrix stages 18 blocks; the defaults (matvec.wgsl) are the largest case.
    #[test]
    fn workgroup_arrays_fit_what_is_staged() {
        assert_eq!(Shape::CPU.workgroup_lengths(GgmlType::Q4_1, 1, 576), [36, 18, 16]);
        assert_eq!(Shape::CPU.workgroup_lengths(GgmlType::Q8_0, 4, 1536), [384, 192, 16]);
        assert_eq!(Shape::CPU.workgroup_lengths(GgmlType::F32, 4, 576), [1, 1, 16]);
        assert_eq!(Shape::GPU.workgroup_lengths(GgmlType::Q4_0, 4, 576), [144, 72, 512]);
        let widest = MAX_COLS as u32;
        for line in [
            format!("override XQ_LEN: u32 = {}u;", widest / 16),
            format!("override XB_LEN: u32 = {}u;", widest / 32),
            format!("override RED_LEN: u32 = {RED_FLOATS}u;"),
        ] {
            assert!(SHADER.contains(&line), "{line}");
        }
    }

    #[test]
    fn row_slices_fit_the_binding() {
        // Llama 3.1 8B's Q4_0 head: 128,256 rows of 2,304 bytes, 134,217,728-byte bindings.
        let s = row_slices(128_256, 2304, 8, 134_217_728);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0], 0..58_240);
        assert_eq!(s.last().unwrap().end, 128_256);
        for r in &s {
            assert!(r.start.is_multiple_of(8));
            assert!(((r.len().next_multiple_of(8) * 2304 + 16) as u64) <= 134_217_728);
        }
        // Everything in one binding when it fits; at least one row group when nothing does.
        assert_eq!(row_slices(100, 64, 8, 1 << 20), vec![0..100]);
        assert_eq!(row_slices(20, 1000, 8, 10), vec![0..8, 8..16, 16..20]);
    }

    #[test]
    fn rows_as_wide_as_workgroup_memory_allows() {
        // 16 KiB: 16,384 − 2,048 bytes of `red`, 1.25 bytes a value, whole blocks.
        assert_eq!(widest_row(16384), 11456);
        assert!(11456 * 5 / 4 + RED_FLOATS as usize * 4 <= 16384);
        assert!(widest_row(32768) >= 14336);
        assert_eq!(widest_row(1000), 0);
    }

    #[test]
    fn tiles_only_as_wide_as_the_pass() {
        assert_eq!(columns_per_workgroup(4, 1), 1);
        assert_eq!(columns_per_workgroup(4, 2), 2);
        assert_eq!(columns_per_workgroup(4, 3), 4);
        assert_eq!(columns_per_workgroup(4, 32), 4);
        assert_eq!(columns_per_workgroup(1, 8), 1);
    }

    #[test]
    fn short_matrices_take_narrower_workgroups_on_gpus() {
        let wg = |shape: Shape, rows| shape.for_rows(rows).workgroup;
        // SmolLM2: output and down projections (576 rows), Q·K·V (960): one row pair a workgroup,
        // 288 and 480 of them; gate/up (3072) and the head keep 64 invocations (384, 6144).
        assert_eq!(wg(Shape::GPU, 576), 16);
        assert_eq!(wg(Shape::GPU, 960), 16);
        assert_eq!(wg(Shape::GPU, 3072), 64);
        assert_eq!(wg(Shape::GPU, 49152), 64);
        // Llama 3.1 8B's 4096-row matrices keep 64 (512 workgroups); 1024 rows take 32 (256).
        assert_eq!(wg(Shape::GPU, 4096), 64);
        assert_eq!(wg(Shape::GPU, 1024), 32);
        assert_eq!(dispatch_size(1024, Shape::GPU.for_rows(1024), 65535), (256, 1));
        // Never below one row group; CPU adapters keep their shape.
        assert_eq!(wg(Shape::GPU, 3), 16);
        assert_eq!(Shape::CPU.for_rows(576), Shape::CPU);
    }

    #[test]
    fn dispatch_folds_past_the_limit() {
        // 128 rows per workgroup on CPUs, 8 on GPUs.
        assert_eq!(dispatch_size(37, Shape::CPU, 65535), (1, 1));
        assert_eq!(dispatch_size(576, Shape::CPU, 65535), (5, 1));
        assert_eq!(dispatch_size(37, Shape::GPU, 65535), (5, 1));
        assert_eq!(dispatch_size(49152, Shape::GPU, 65535), (6144, 1));
        assert_eq!(dispatch_size(8 * 70000, Shape::GPU, 65535), (65535, 2));
    }

    /// The probe's and the layer ops' shaders validate too.
    #[test]
    fn other_shaders_validate() {
        for (name, src) in [
            ("probe.wgsl", crate::probe::SHADER),
            ("ops.wgsl", &crate::engine::ops_source()),
        ] {
            let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{name}: {e}"));
            let caps = naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
                .validate(&module)
                .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        }
    }

    /// Every entry point parses and validates with naga, without a GPU (so a shader error is a
    /// test failure here, not an `unwrap` at pipeline creation on someone's machine).
    #[test]
    fn shader_validates() {
        for subgroups in [false, true] {
            let module = naga::front::wgsl::parse_str(&source(subgroups)).expect("matvec.wgsl parses");
            // unpack2x16float is core WGSL (WebGPU) and available on every Vulkan/Metal/DX12 device.
            let mut caps = naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
            if subgroups {
                caps |= naga::valid::Capabilities::SUBGROUP;
            }
            let mut v = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps);
            if subgroups {
                v.subgroup_stages(naga::valid::ShaderStages::COMPUTE)
                    .subgroup_operations(naga::valid::SubgroupOperationSet::all());
            }
            v.validate(&module)
                .unwrap_or_else(|e| panic!("matvec.wgsl (subgroups {subgroups}) validates: {e:?}"));
            for ty in gpu_types() {
                let name = entry_point(ty).unwrap();
                assert!(module.entry_points.iter().any(|e| e.name == name), "{name}");
            }
        }
    }
}

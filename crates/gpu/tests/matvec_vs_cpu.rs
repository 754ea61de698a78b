#![cfg(not(target_arch = "wasm32"))]
//! Every matvec kernel against the CPU reference, on shapes that are not multiples of the
//! workgroup: 37 rows (not a multiple of 4), 6 or 9 blocks per row (fewer than the 16 lanes, and
//! odd so a scale word is half used), with the CPU adapters' and the GPUs' work shapes, for one
//! column (decode) and for several (prefill chunks and batches: 3 fits one column tile, 6 makes
//! a full tile and a partial one).
//!
//! Float weights are compared with an f64 dot of the dequantized row (only the f32 summation
//! order differs). Quantized weights are dotted against 8-bit activation blocks, as on the CPU
//! (ggml's `vec_dot_type`), so they are compared with `tokscope_core`'s own integer dot
//! (`dot_rows` on quantized `Acts`): the same rounding, so again only the summation order differs.

mod common;

use tokscope_core::quant::{Acts, GgmlType, dequantize_row, dot_rows, quantize_row};
use tokscope_gpu::GpuContext;
use tokscope_gpu::matvec::{
    Epilogue, GpuMatrix, MatvecIo, MatvecKernels, Shape, Step, gpu_types, subgroups_for, widest_row,
};
use tokscope_gpu::readback::read_f32;
use tokscope_gpu::repack::repack;
use wgpu::util::DeviceExt;

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7919 + seed * 104729) % 1009) as f32 / 504.5) - 1.0)
        .collect()
}

fn storage(ctx: &GpuContext, data: &[f32]) -> wgpu::Buffer {
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(data),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    })
}

/// What one matvec call fuses around the product.
#[derive(Clone, Copy, Debug)]
enum Case {
    Store,
    /// RMSNorm of the input with a weight, then the product added to `y`.
    NormAdd,
    /// Rows are gate/up interleaved: `y[i] = silu(row 2i) · row 2i+1`.
    SwiGlu,
}

/// One call's vectors: the input, the norm weight, and `y` before the call (column after column).
struct Vectors<'a> {
    x: &'a [f32],
    g: &'a [f32],
    y0: &'a [f32],
}

/// Runs one call for `n` columns on the GPU; returns `y`.
fn gpu_matvec(
    ctx: &GpuContext,
    kernels: &mut MatvecKernels,
    m: &GpuMatrix,
    v: &Vectors,
    case: Case,
    n: usize,
) -> Vec<f32> {
    let (g, y0) = (v.g, v.y0);
    let (x_buf, y_buf, g_buf) = (storage(ctx, v.x), storage(ctx, y0), storage(ctx, g));
    let step = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::bytes_of(&Step::first(n)),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let (norm, epilogue) = match case {
        Case::Store => (None, Epilogue::Store),
        Case::NormAdd => (Some((&g_buf, 1e-5)), Epilogue::Add),
        Case::SwiGlu => (None, Epilogue::SwiGlu),
    };
    let call = kernels.bind(
        ctx,
        m,
        MatvecIo {
            x: &x_buf,
            y: &y_buf,
            norm,
            epilogue,
            step: &step,
            head: false,
            combine: None,
            out_rows: None,
        },
    );
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        kernels.encode(&mut pass, &call, n);
    }
    ctx.queue.submit([enc.finish()]);
    read_f32(ctx, &y_buf, y0.len()).unwrap()
}

/// The CPU's result for the same call, and per output the sum of |terms| its error scales with.
fn cpu_matvec(ty: GgmlType, rows: usize, cols: usize, bytes: &[u8], v: &Vectors, case: Case) -> (Vec<f32>, Vec<f64>) {
    let (g, y0) = (v.g, v.y0);
    let mut x = v.x.to_vec();
    if let Case::NormAdd = case {
        let ms = x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / cols as f64;
        let inv = 1.0 / (ms + 1e-5).sqrt();
        for (v, w) in x.iter_mut().zip(g) {
            *v = (*v as f64 * inv) as f32 * w;
        }
    }
    let mut dots = vec![0f32; rows];
    let mut w = vec![0f32; rows * cols];
    dequantize_row(ty, bytes, &mut w).unwrap();
    let magnitude: Vec<f64> = (0..rows)
        .map(|r| {
            w[r * cols..(r + 1) * cols]
                .iter()
                .zip(&x)
                .map(|(a, b)| (*a as f64 * *b as f64).abs())
                .sum()
        })
        .collect();
    if ty.is_quantized() {
        let mut acts = Acts::new(1, cols);
        acts.x_mut().copy_from_slice(&x);
        acts.quantize();
        dot_rows(ty, bytes, bytes.len() / rows, acts.row_for(ty, 0), &mut dots).unwrap();
    } else {
        for (r, d) in dots.iter_mut().enumerate() {
            *d = w[r * cols..(r + 1) * cols]
                .iter()
                .zip(&x)
                .map(|(a, b)| *a as f64 * *b as f64)
                .sum::<f64>() as f32;
        }
    }
    match case {
        Case::Store => (dots, magnitude),
        Case::NormAdd => (dots.iter().zip(y0).map(|(d, y)| d + y).collect(), magnitude),
        Case::SwiGlu => {
            let y = dots.chunks(2).map(|p| p[0] / (1.0 + (-p[0]).exp()) * p[1]).collect();
            let mag = magnitude
                .chunks(2)
                .zip(dots.chunks(2))
                .map(|(m, d)| m[0] * d[1].abs() as f64 + m[1] * d[0].abs() as f64)
                .collect();
            (y, mag)
        }
    }
}

#[test]
fn matvec_matches_cpu_reference_for_every_type_case_and_shape() {
    let Some(ctx) = common::gpu() else { return };
    println!("adapter: {:?}", ctx.summary());
    // Both shipped shapes, and one in between (several lanes and several rows per invocation).
    // These matrices are short, so the GPU shape runs them in workgroups of one row group
    // (`Shape::for_rows`); it runs again unnarrowed, and the mixed shape narrows some sizes part
    // way (37 rows: workgroups of 4 invocations; 130: of 16).
    let mixed = Shape {
        lanes: 4,
        rows: 4,
        workgroup: 32,
        cols: 2,
        min_workgroups: 8,
    };
    let wide = Shape {
        min_workgroups: 0,
        ..Shape::GPU
    };
    // Lanes summed through workgroup memory, and by subgroup shuffles where the adapter's
    // subgroups hold a row group (lavapipe's hold 8: the mixed shape's 4 lanes).
    let mut runs = vec![(Shape::CPU, false), (Shape::GPU, false), (wide, false), (mixed, false)];
    for shape in [Shape::GPU, wide, mixed] {
        if subgroups_for(&ctx, shape) {
            runs.push((shape, true));
        }
    }
    println!("shapes (lanes summed by subgroups?): {runs:?}");
    for (shape, subgroups) in runs {
        let mut kernels = MatvecKernels::with_options(&ctx, shape, subgroups);
        // K-quants take whole super-blocks of 256: the last two sizes.
        let sizes = [(37, 192), (5, 288), (130, 32), (38, 96), (9, 512), (6, 768)];
        for ((rows, cols), n) in sizes.into_iter().zip([1, 3, 6, 2, 1, 3]) {
            let x = values(n * cols, 1);
            let g = values(cols, 3);
            for ty in gpu_types() {
                if !cols.is_multiple_of(ty.block_size() as usize) {
                    continue;
                }
                let bytes = quantize_row(ty, &values(rows * cols, 2)).unwrap();
                let packed = repack(ty, rows, cols, &bytes, shape.rows as usize).unwrap();
                let m = GpuMatrix::upload(&ctx, "w", &packed).unwrap();
                for case in [Case::Store, Case::NormAdd, Case::SwiGlu] {
                    let label = format!("{shape:?} (subgroups {subgroups})");
                    check(
                        &ctx,
                        &mut kernels,
                        &m,
                        (ty, rows, cols, &bytes),
                        (&x, &g),
                        case,
                        n,
                        &label,
                    );
                }
            }
        }
    }
}

/// One call on the GPU against the CPU for every output column: `w` is (type, rows, cols, GGUF
/// bytes), `xg` the inputs and the norm weight.
#[allow(clippy::too_many_arguments)]
fn check(
    ctx: &GpuContext,
    kernels: &mut MatvecKernels,
    m: &GpuMatrix,
    (ty, rows, cols, bytes): (GgmlType, usize, usize, &[u8]),
    (x, g): (&[f32], &[f32]),
    case: Case,
    n: usize,
    label: &str,
) {
    let out_rows = if let Case::SwiGlu = case { rows / 2 } else { rows };
    if out_rows * 2 != rows && matches!(case, Case::SwiGlu) {
        return;
    }
    let y0 = values(n * out_rows, 4);
    let v = Vectors { x, g, y0: &y0 };
    let got = gpu_matvec(ctx, kernels, m, &v, case, n);
    let (mut want, mut magnitude) = (vec![], vec![]);
    for j in 0..n {
        let column = Vectors {
            x: &x[j * cols..(j + 1) * cols],
            g,
            y0: &y0[j * out_rows..(j + 1) * out_rows],
        };
        let (w, m) = cpu_matvec(ty, rows, cols, bytes, &column, case);
        want.extend(w);
        magnitude.extend(m);
    }
    let (mut worst, mut worst_at) = (0f64, 0);
    for r in 0..n * out_rows {
        // f32 accumulation over `cols` terms in a different order; the CPU's RMSNorm is
        // computed in f64 here, the GPU's in f32.
        let err = (got[r] as f64 - want[r] as f64).abs() / (magnitude[r] + 1e-6);
        if err > worst {
            (worst, worst_at) = (err, r);
        }
    }
    assert!(
        worst < 2e-5,
        "{label} {ty} {rows}x{cols} ×{n} {case:?}: relative error {worst:e} at output {worst_at}: {} vs {}",
        got[worst_at],
        want[worst_at]
    );
}

/// A row wider than a column tile (Llama 3.1 8B's down projection: 14,336 values) is staged in
/// one column where the device's workgroup memory holds it, and refused by name where not.
#[test]
fn wide_rows_stage_where_the_device_allows() {
    let Some(ctx) = common::gpu() else { return };
    let (rows, cols) = (6, 14336);
    let shape = Shape::for_device(ctx.kind);
    let mut kernels = MatvecKernels::with_shape(&ctx, shape);
    let widest = widest_row(ctx.limits.max_compute_workgroup_storage_size);
    println!("widest row staged here: {widest}");
    let (x, g) = (values(2 * cols, 1), values(cols, 3));
    for ty in [GgmlType::Q4_0, GgmlType::Q8_0] {
        let bytes = quantize_row(ty, &values(rows * cols, 2)).unwrap();
        let packed = repack(ty, rows, cols, &bytes, shape.rows as usize).unwrap();
        match GpuMatrix::upload(&ctx, "blk.0.ffn_down.weight", &packed) {
            Err(e) => {
                assert!(cols > widest, "{e}");
                assert!(e.to_string().contains("blk.0.ffn_down.weight"), "{e}");
            }
            Ok(m) => {
                assert!(cols <= widest);
                for n in [1, 2] {
                    for case in [Case::Store, Case::NormAdd] {
                        check(
                            &ctx,
                            &mut kernels,
                            &m,
                            (ty, rows, cols, &bytes),
                            (&x, &g),
                            case,
                            n,
                            "wide",
                        );
                    }
                }
            }
        }
    }
}

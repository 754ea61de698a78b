//! Times one matvec kernel alone (many dispatches in one pass) and prints its read GB/s.
#![cfg_attr(target_arch = "wasm32", allow(unused_imports))]
use std::time::Instant;
use tokscope_core::quant::{GgmlType, quantize_row};
use tokscope_gpu::GpuContext;
use tokscope_gpu::matvec::{Epilogue, GpuMatrix, MatvecIo, MatvecKernels, Shape, Step};
use tokscope_gpu::repack::repack;
use wgpu::util::DeviceExt;

/// Native only (the browser has no blocking device set-up).
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let ctx = GpuContext::new_blocking().unwrap();
    // N=4: each call multiplies 4 columns (a prefill chunk or a batch of 4); GB/s counts the
    // weights once.
    let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let cols_per_wg: u32 = std::env::var("NC").ok().and_then(|v| v.parse().ok()).unwrap_or(4);
    let shape = |lanes, rows, workgroup| Shape {
        lanes,
        rows,
        workgroup,
        cols: cols_per_wg,
        min_workgroups: 0,
    };
    let shapes = [shape(1, 8, 16), shape(1, 8, 32), shape(2, 8, 16), Shape::GPU];
    for shape in shapes {
        let mut kernels = MatvecKernels::with_shape(&ctx, shape);
        println!("{shape:?}, {n} columns");
        // One SmolLM2 layer's matrices (QKV, output, gate/up, down) and the head.
        for (ty, rows, cols) in [
            (GgmlType::Q4_1, 960, 576),
            (GgmlType::Q4_1, 576, 576),
            (GgmlType::Q4_1, 3072, 576),
            (GgmlType::Q4_1, 576, 1536),
            (GgmlType::Q8_0, 49152, 576),
        ] {
            let vals: Vec<f32> = (0..rows * cols)
                .map(|i| ((i * 7919 % 1009) as f32 / 504.5) - 1.0)
                .collect();
            let bytes = quantize_row(ty, &vals).unwrap();
            let packed = repack(ty, rows, cols, &bytes, shape.rows as usize).unwrap();
            // COLD=1: enough copies to stream ~128 MB per round, so the weights come from DRAM
            // as in a real decode, not from the cache.
            let copies = if std::env::var("COLD").is_ok() {
                (128 << 20) / bytes.len() + 1
            } else {
                1
            };
            let ms: Vec<GpuMatrix> = (0..copies)
                .map(|_| GpuMatrix::upload(&ctx, "w", &packed).unwrap())
                .collect();
            let x = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: bytemuck::cast_slice(&vals[..n * cols]),
                usage: wgpu::BufferUsages::STORAGE,
            });
            let y = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: (n * rows) as u64 * 4,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            });
            let step = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: bytemuck::bytes_of(&Step::first(n)),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let binds: Vec<_> = ms
                .iter()
                .map(|m| {
                    kernels.bind(
                        &ctx,
                        m,
                        MatvecIo {
                            x: &x,
                            y: &y,
                            norm: std::env::var("NORM").is_ok().then_some((&x, 1e-5)),
                            epilogue: Epilogue::Store,
                            step: &step,
                            head: false,
                            combine: None,
                            out_rows: None,
                        },
                    )
                })
                .collect();
            let calls = copies.max(if rows > 10000 { 10 } else { 100 });
            let mut best = f64::MAX;
            for _ in 0..5 {
                let mut enc = ctx.device.create_command_encoder(&Default::default());
                {
                    let mut pass = enc.begin_compute_pass(&Default::default());
                    for i in 0..calls {
                        kernels.encode(&mut pass, &binds[i % copies], n);
                    }
                }
                let t = Instant::now();
                ctx.queue.submit([enc.finish()]);
                ctx.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
                best = best.min(t.elapsed().as_secs_f64());
            }
            let per = best / calls as f64;
            println!(
                "{ty} {rows}x{cols}: {:.1} us/dispatch, {:.2} GB/s",
                per * 1e6,
                bytes.len() as f64 / per / 1e9
            );
        }
    }
}

#![cfg(not(target_arch = "wasm32"))]
//! Every matvec kernel against the CPU reference (dequantize, then an f64 dot), on shapes that
//! are not multiples of the workgroup: 37 rows (not a multiple of 4), 6 or 9 blocks per row
//! (fewer than the 16 lanes, and odd so a scale word is half used).

mod common;

use tokscope_core::quant::{GgmlType, dequantize_row, quantize_row};
use tokscope_gpu::matvec::{GpuMatrix, MatvecKernels};
use tokscope_gpu::readback::read_f32;
use tokscope_gpu::repack::repack;
use wgpu::util::DeviceExt;

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7919 + seed * 104729) % 1009) as f32 / 504.5) - 1.0)
        .collect()
}

#[test]
fn matvec_matches_cpu_reference_for_every_type() {
    let Some(ctx) = common::gpu() else { return };
    println!("adapter: {:?}", ctx.summary());
    let kernels = MatvecKernels::new(&ctx);
    for (rows, cols) in [(37, 192), (5, 288), (130, 32)] {
        let x = values(cols, 1);
        let x_buf = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("x"),
            contents: bytemuck::cast_slice(&x),
            usage: wgpu::BufferUsages::STORAGE,
        });
        for ty in GgmlType::SUPPORTED {
            let bytes = quantize_row(ty, &values(rows * cols, 2)).unwrap();
            let packed = repack(ty, rows, cols, &bytes).unwrap();
            let m = GpuMatrix::upload(&ctx, "w", &packed).unwrap();
            let y_buf = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("y"),
                size: (rows * 4) as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let bind = kernels.bind(&ctx, &m, &x_buf, &y_buf);
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                kernels.encode(&mut pass, &m, &bind);
            }
            ctx.queue.submit([enc.finish()]);
            let got = read_f32(&ctx, &y_buf, rows).unwrap();
            let mut w = vec![0f32; rows * cols];
            dequantize_row(ty, &bytes, &mut w).unwrap();
            let (mut worst, mut worst_at) = (0f64, 0);
            for r in 0..rows {
                let row = &w[r * cols..(r + 1) * cols];
                let exact: f64 = row.iter().zip(&x).map(|(a, b)| *a as f64 * *b as f64).sum();
                let magnitude: f64 = row.iter().zip(&x).map(|(a, b)| (*a as f64 * *b as f64).abs()).sum();
                // f32 accumulation over `cols` terms in a different order.
                let err = (got[r] as f64 - exact).abs() / (magnitude + 1e-6);
                if err > worst {
                    (worst, worst_at) = (err, r);
                }
            }
            assert!(
                worst < 1e-5,
                "{ty} {rows}x{cols}: relative error {worst:e} at row {worst_at}"
            );
        }
    }
}

//! Read patterns on this adapter (behind repack.rs's row groups and the probe's choice): 16-byte,
//! 4-byte and 32-byte loads with lanes interleaved (`s4`, `s1`, `s8`), and per-invocation runs
//! (`srow`). `cargo run --release -p tokscope-gpu --example stream_patterns`.
#![cfg_attr(target_arch = "wasm32", allow(unused_imports))]
use std::time::Instant;
use tokscope_gpu::GpuContext;
use wgpu::util::DeviceExt;

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let ctx = GpuContext::new_blocking().unwrap();
    let module = ctx.shader("stream_patterns", include_str!("stream_patterns.wgsl"));
    let buf = |c: &[u8]| {
        ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: c,
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let time = |p: &wgpu::ComputePipeline, bind: &wgpu::BindGroup, groups: u32, reps: u32| {
        let mut best = f64::MAX;
        for _ in 0..4 {
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(p);
                pass.set_bind_group(0, bind, &[]);
                for _ in 0..reps {
                    pass.dispatch_workgroups(groups, 1, 1);
                }
            }
            let t = Instant::now();
            ctx.queue.submit([enc.finish()]);
            ctx.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            best = best.min(t.elapsed().as_secs_f64() / reps as f64);
        }
        best
    };
    let y = buf(bytemuck::cast_slice(&vec![0f32; 1 << 20]));
    let words = 16usize << 20;
    let data: Vec<u32> = (0..words as u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let w = buf(bytemuck::cast_slice(&data));
    for (entry, groups) in [("s4", 64u32), ("s1", 64), ("s8", 64), ("srow", 256), ("srow", 64)] {
        let p = ctx.pipeline(&module, entry);
        let b = match entry {
            "s4" | "srow" => 0,
            "s1" => 1,
            _ => 2,
        };
        let entries = [(b, &w), (3, &y)].map(|(i, b)| wgpu::BindGroupEntry {
            binding: i,
            resource: b.as_entire_binding(),
        });
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &p.get_bind_group_layout(0),
            entries: &entries,
        });
        let t = time(&p, &bind, groups, 5);
        println!(
            "{entry} groups {groups}: {:.1} us, {:.2} GB/s",
            t * 1e6,
            (words * 4) as f64 / t / 1e9
        );
    }
}

//! Layout experiments behind matvec.rs's `Shape::CPU` (kept so the figures in its doc comment can be
//! re-measured): variants of the Q8_0 head matvec (49152×576) on this adapter.
#![cfg_attr(target_arch = "wasm32", allow(unused_imports))]
use std::time::Instant;
use tokscope_gpu::GpuContext;
use wgpu::util::DeviceExt;

/// Native only (the browser has no blocking device set-up).
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let ctx = GpuContext::new_blocking().unwrap();
    let module = ctx.shader("mvexp", include_str!("mvexp.wgsl"));
    let rows = 49152u64;
    let words = rows * 18 * 8 + rows * 9;
    let data: Vec<u32> = (0..words as u32)
        .map(|i| i.wrapping_mul(2654435761) & 0x3F3F3F3F)
        .collect();
    let buf = |c: &[u8], u| {
        ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: c,
            usage: u,
        })
    };
    let w = buf(bytemuck::cast_slice(&data), wgpu::BufferUsages::STORAGE);
    let xq = buf(&[1u8; 576], wgpu::BufferUsages::STORAGE);
    let xf = buf(bytemuck::cast_slice(&[0.5f32; 576]), wgpu::BufferUsages::STORAGE);
    let xd = buf(bytemuck::cast_slice(&[0.5f32; 18]), wgpu::BufferUsages::STORAGE);
    let y = buf(
        bytemuck::cast_slice(&vec![0f32; rows as usize]),
        wgpu::BufferUsages::STORAGE,
    );
    for (entry, groups) in [
        ("int_dot", 768),
        ("f32_dot", 768),
        ("f32_dot4", 192),
        ("int_dot_il", 768),
        ("f32_dot_il", 768),
        ("int_dot_v", 768),
        ("int_dot4_v", 192),
        ("f32_dot4_v", 192),
        ("int_dot4_wg", 192),
        ("int_dot8_v", 96),
        ("int_dot2_v", 384),
    ] {
        let p = ctx.pipeline(&module, entry);
        let layout = p.get_bind_group_layout(0);
        let all = [&w, &xq, &xf, &xd, &y, &w, &xq];
        let used: Vec<u32> = match entry {
            e if e.starts_with("int") && (e.ends_with("_v") || e.ends_with("_wg")) => vec![0, 3, 4, 5, 6],
            e if e.starts_with("f32") && e.ends_with("_v") => vec![0, 2, 4, 5],
            e if e.starts_with("int") => vec![0, 1, 3, 4],
            _ => vec![0, 2, 4],
        };
        let entries: Vec<_> = used
            .iter()
            .map(|&i| wgpu::BindGroupEntry {
                binding: i,
                resource: all[i as usize].as_entire_binding(),
            })
            .collect();
        let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        });
        let mut best = f64::MAX;
        for _ in 0..4 {
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(&p);
                pass.set_bind_group(0, &bind, &[]);
                for _ in 0..5 {
                    pass.dispatch_workgroups(groups, 1, 1);
                }
            }
            let t = Instant::now();
            ctx.queue.submit([enc.finish()]);
            ctx.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            best = best.min(t.elapsed().as_secs_f64() / 5.0);
        }
        println!(
            "{entry}: {:.2} ms, {:.2} GB/s",
            best * 1e3,
            (words * 4) as f64 / best / 1e9
        );
    }
}

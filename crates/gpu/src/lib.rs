//! tokscope-gpu: the model on the GPU through wgpu — natively (Vulkan/Metal/DX12; lavapipe or
//! SwiftShader on the CPU in tests) and in the browser (WebGPU).

pub mod batch;
pub mod device;
pub mod engine;
pub mod fused;
pub mod matvec;
pub mod probe;
pub mod readback;
pub mod repack;
pub mod runner;

pub use device::{AdapterSummary, GpuContext, GpuError};

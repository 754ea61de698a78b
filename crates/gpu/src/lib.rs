//! tokscope-gpu: the model on the GPU through wgpu — natively (Vulkan/Metal/DX12; lavapipe or
//! SwiftShader on the CPU in tests) and in the browser (WebGPU).

pub mod batch;
pub mod chain;
pub mod chained;
pub mod completion;
pub mod decode;
pub mod device;
pub mod embed;
pub mod engine;
mod engine_error;
pub mod fused;
pub mod graph;
pub mod matvec;
pub mod probe;
pub mod readback;
pub mod repack;
pub mod runner;
pub mod sampling;
pub mod sequences;
mod top_k;
pub mod weights;
pub mod wgsl_compact;

pub use device::{AdapterSummary, GpuContext, GpuError};

/// A kernel's WGSL: the file as written natively, its compacted copy (build.rs) in the page.
macro_rules! wgsl {
    ($name:literal) => {{
        #[cfg(target_arch = "wasm32")]
        let source = include_str!(concat!(env!("OUT_DIR"), "/", $name));
        #[cfg(not(target_arch = "wasm32"))]
        let source = include_str!($name);
        source
    }};
}
pub(crate) use wgsl;

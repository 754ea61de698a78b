//! Tensor types: the ggml type table, block layouts, activation quantization and dot kernels.

mod acts;
#[cfg(target_arch = "x86_64")]
mod avx2;
mod blocks;
mod dot;
pub mod kquants;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;
mod types;

pub use acts::{ActRow, Acts};
pub use blocks::{QK, UnsupportedType, dequantize_row, quantize_row};
pub use dot::dot_rows;
pub use types::GgmlType;

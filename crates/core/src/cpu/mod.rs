//! The CPU engine: forward pass of the llama family over a [`crate::model::Model`].

mod attention;
mod engine;
mod kv_cache;
mod matmul;
pub mod ops;
pub mod parallel;

pub use attention::{AttentionShape, MAX_HEAD_DIM, attention};
pub use engine::{CpuEngine, EngineError, PREFILL_CHUNK};
pub use kv_cache::{KvCache, VALUE_BYTES as KV_VALUE_BYTES};
pub use matmul::matmul;

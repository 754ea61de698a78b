//! What the GPU engine refuses or fails at, one type for its three parts.

use crate::GpuError;
use tokscope_core::cpu::EngineError;

#[derive(Debug, thiserror::Error)]
pub enum GpuEngineError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Batch(String),
}

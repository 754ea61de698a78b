//! Why a GGUF cannot be run as a model: each message says what to change or look for.

use crate::gguf::GgufError;
use crate::quant::GgmlType;
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum ModelError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("unsupported architecture {0:?}: tokscope runs general.architecture = llama, gemma3, qwen2 or qwen3")]
    UnsupportedArchitecture(String),
    #[error(
        "tensor {tensor:?} is {ty}, which tokscope cannot run yet (supported: F32, F16, BF16, Q8_0, Q6_K, Q5_0, Q5_1, Q5_K, Q4_K, Q4_0, Q4_1, Q3_K, Q2_K); re-quantize the model to one of those"
    )]
    UnsupportedType { tensor: String, ty: GgmlType },
    #[error("tensor {tensor:?} has shape {found:?}, expected {expected:?} from the model's hyperparameters")]
    ShapeMismatch {
        tensor: String,
        expected: Vec<u64>,
        found: Vec<u64>,
    },
    #[error("bad hyperparameter {key}: {reason}")]
    BadConfig { key: String, reason: String },
}

//! How large a model the browser's CPU engine can hold, checked before a byte is allocated, so
//! a model too big is refused with the reason instead of a WebAssembly trap that kills the
//! worker.
//!
//! WebAssembly's 32-bit memories address 2³² bytes (65,536 pages of 64 KiB; WebAssembly Core
//! Specification 2.0, §2.3.8 "Memory Types" and §4.2.8 "Memory Instances"), and Chromium and
//! Firefox let a page grow one to that 4 GiB. The model's bytes live in that memory beside the
//! KV cache, the activations and the tokenizer; a quarter of it is left for those.

use crate::human;

/// The most a wasm32 memory can hold: 4 GiB.
pub const WASM32_MEMORY_BYTES: u64 = 1 << 32;

/// The largest model file the page loads into WebAssembly: 3 GiB, leaving 1 GiB for the rest.
pub const WASM_MODEL_LIMIT_BYTES: u64 = 3 << 30;

/// `Ok` when a model file of `bytes` fits the page's WebAssembly memory; else why not.
pub fn check_wasm_model_size(bytes: u64) -> Result<(), String> {
    if bytes <= WASM_MODEL_LIMIT_BYTES {
        return Ok(());
    }
    Err(format!(
        "the model is {}: a page holds at most {} of model in WebAssembly's {} memory. \
         Pick a smaller model or a smaller quantization, or run it with the `tokscope` command line",
        human::bytes(bytes as f64),
        human::bytes(WASM_MODEL_LIMIT_BYTES as f64),
        human::bytes(WASM32_MEMORY_BYTES as f64),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_over_three_gib_is_refused_with_its_size() {
        assert!(check_wasm_model_size(WASM_MODEL_LIMIT_BYTES).is_ok());
        assert!(check_wasm_model_size(135_000_000).is_ok());
        let e = check_wasm_model_size(5_000_000_000).unwrap_err();
        assert!(
            e.contains("5.00 GB") && e.contains("3.22 GB") && e.contains("4.29 GB"),
            "{e}"
        );
    }
}

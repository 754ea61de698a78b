//! tokscope-core: everything that needs neither a GPU nor a browser.
//!
//! - [`gguf`]: validated, zero-copy GGUF reader (and a writer for tests and re-encoding).
//! - [`quant`]: ggml tensor types, block layouts and dot kernels.

pub mod gguf;
pub mod quant;
pub mod cpu;
pub mod model;
pub mod tokenizer;
pub mod chat;
pub mod sampling;
pub mod prompt;
pub mod synthetic;

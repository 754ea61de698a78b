//! tokscope-core: everything that needs neither a GPU nor a browser.
//!
//! - [`gguf`]: validated, zero-copy GGUF reader (and a writer for tests and re-encoding).
//! - [`quant`]: ggml tensor types, block layouts and dot kernels.
//! - [`roofline`], [`agent`], [`presets`], [`meter`], [`text_stats`], [`lesson`], [`human`]: the numbers and sentences the pages show, as
//!   tested pure functions with their sources.

pub mod agent;
pub mod chat;
pub mod cpu;
pub mod engine_trial;
pub mod gguf;
pub mod human;
pub mod lesson;
pub mod limits;
pub mod malformed;
pub mod meter;
pub mod model;
pub mod presets;
pub mod prompt;
pub mod quant;
pub mod record;
pub mod requant;
pub mod roofline;
pub mod sampling;
pub mod shaped;
pub mod shipped;
pub mod stats;
pub mod synthetic;
pub mod text_stats;
pub mod tokenizer;

//! What each fuzz target does with one input, shared by the libFuzzer entries
//! (`fuzz_targets/`) and the stable regression test (`crates/web/tests/fuzz_regressions.rs`),
//! which replays every input under `fuzz/regressions/TARGET/` that once failed.
#![allow(dead_code)]

pub mod chat_template;
pub mod gguf;
pub mod tokenizer;
pub mod url_params;

/// One target: what it does with an input (panics on a bug).
pub type Target = fn(&[u8]);

/// The targets by name, as `cargo fuzz` and the regression directories call them.
pub const TARGETS: [(&str, Target); 4] = [
    ("gguf", gguf::run),
    ("tokenizer", tokenizer::run),
    ("chat_template", chat_template::run),
    ("url_params", url_params::run),
];

//! libFuzzer entry: see `harness/chat_template.rs` (shared with the regression test in crates/web).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::chat_template::run(data));

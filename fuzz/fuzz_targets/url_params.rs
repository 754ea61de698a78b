//! libFuzzer entry: see `harness/url_params.rs` (shared with the regression test in crates/web).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::url_params::run(data));

#![cfg(not(target_arch = "wasm32"))]

//! A GPU for tests: lavapipe in CI. Without an adapter the tests skip with a note, unless
//! TOKSCOPE_REQUIRE_GPU=1 (set by scripts/test.sh), where a missing adapter is a failure.

use tokscope_gpu::GpuContext;

pub fn gpu() -> Option<GpuContext> {
    match GpuContext::new_blocking() {
        Ok(ctx) => Some(ctx),
        Err(e) if std::env::var("TOKSCOPE_REQUIRE_GPU").as_deref() != Ok("1") => {
            eprintln!("skipping GPU test: {e}");
            None
        }
        Err(e) => panic!("TOKSCOPE_REQUIRE_GPU=1 but {e}"),
    }
}

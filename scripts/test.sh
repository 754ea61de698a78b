#!/usr/bin/env bash
# Every check the project has: formatting, clippy on native and wasm32, all tests (unit, the tiny
# synthetic models, the CLI end to end, parity with llama.cpp on the default model, the GPU
# engine on lavapipe and in Chromium's WebGPU, the page end to end in Chromium, Firefox and
# WebKitGTK — every reader's path in each, WebGPU in the first two — and a short run of every
# fuzz target).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

echo "== cargo fmt --check"
cargo fmt --all -- --check

# Clippy (-D warnings) runs inside the builds below rather than as separate check passes:
# clippy-driver wraps rustc for the workspace's own crates, as `cargo clippy` itself does, so
# each crate is linted and compiled in one go. Separate native and wasm32 checks of everything
# took 20 of a fresh CI run's minutes on 2 cores. What they cover: the native build is every
# target (`cargo test` builds libraries, binaries, tests and examples); on wasm32, the page's
# release build (the web, gpu and core libraries and both binaries) and the two wasm test targets.
RUSTC_WORKSPACE_WRAPPER=$(rustup which clippy-driver)
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

echo "== build the page (release, wasm32; clippy): the end-to-end tests load dist/"
cargo xtask build-web
echo "== build it again for hosting under a sub-path (the e2e tests serve it at /tokscope/)"
cargo xtask build-web --public-url /tokscope/ --dist target/subpath/tokscope
echo "== tests (clippy; GPU kernels on lavapipe or the machine's GPU: a missing adapter fails; the page in Chromium, Firefox and WebKitGTK)"
rm -f target/e2e/engine-times.txt
TOKSCOPE_REQUIRE_GPU=1 cargo test --workspace --locked
echo "== time each browser engine took (tests/e2e: engines.rs, webgpu.rs)"
cat target/e2e/engine-times.txt
# The wasm tests build in the page's profile (wasm-release): they share its compiled dependencies.
echo "== tests in WebAssembly (Node): the browser's CPU fallback gives the same tokens"
cargo test -p tokscope-core --locked --profile wasm-release --target wasm32-unknown-unknown --test wasm_engine
echo "== GPU engine tests in headless Chromium's WebGPU (a dedicated worker, as the page runs it)"
CHROMEDRIVER=$(command -v chromedriver) WASM_BINDGEN_TEST_TIMEOUT=600 \
  cargo test -p tokscope-gpu --locked --profile wasm-release --target wasm32-unknown-unknown --test browser_engine
# Each fuzz target for a short while from its seeds (the long runs: `cargo xtask fuzz run`).
echo "== fuzz smoke: every target 15 s (libFuzzer, AddressSanitizer, debug assertions)"
cargo xtask fuzz run --seconds 15

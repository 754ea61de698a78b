#!/usr/bin/env bash
# Every check the project has: formatting, clippy on native and wasm32, all tests (unit, the tiny
# synthetic models, the CLI end to end, parity with llama.cpp on the default model, the GPU
# engine on lavapipe and in Chromium's WebGPU, and the page end to end in headless Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== clippy (native)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== clippy (wasm32: the engine must build for the browser)"
cargo clippy -p tokscope-core -p tokscope-gpu -p tokscope-web --all-targets --locked --target wasm32-unknown-unknown -- -D warnings
echo "== build the page (Trunk, release): the end-to-end tests load dist/"
TRUNK_OFFLINE=true trunk build --release
echo "== build it again for hosting under a sub-path (the e2e tests serve it at /tokscope/)"
TRUNK_OFFLINE=true trunk build --release --public-url /tokscope/ --dist target/subpath/tokscope
echo "== tests (GPU kernels on lavapipe or the machine's GPU: a missing adapter fails; the page in headless Chromium)"
TOKSCOPE_REQUIRE_GPU=1 cargo test --workspace --locked
echo "== tests in WebAssembly (Node): the browser's CPU fallback gives the same tokens"
cargo test -p tokscope-core --locked --target wasm32-unknown-unknown --test wasm_engine
echo "== GPU engine tests in headless Chromium's WebGPU (a dedicated worker, as the page runs it)"
CHROMEDRIVER=$(command -v chromedriver) WASM_BINDGEN_TEST_TIMEOUT=600 \
  cargo test -p tokscope-gpu --locked --target wasm32-unknown-unknown --test browser_engine

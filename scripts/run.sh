#!/usr/bin/env bash
# The main job: sets everything up, builds the playground (release) with the default model and
# serves it on http://127.0.0.1:8080 (Ctrl-C stops). Usage: scripts/run.sh [ADDR]
#   ADDR defaults to 127.0.0.1:8080. The page runs on WebGPU where the browser offers it, else
#   on the CPU engine in WebAssembly. The CLI is built too (target/release/tokscope).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo xtask build-web
cargo build --release --locked -p tokscope-cli -p tokscope-e2e --bin tokscope --bin tokscope-serve
exec ./target/release/tokscope-serve dist "${1:-127.0.0.1:8080}"

#!/usr/bin/env bash
# tokscope vs wllama 3.8.1 in the same headless Chromium, one run, the same GGUF (issue #3/#4's
# side-by-side figures), and the native GPU engine on the browser's own driver. Installs the npm
# package under target/, builds the page if needed and the CLI.
# Usage: scripts/vs_wllama.sh [MODEL under dist/, e.g. models/gemma-3-270m-q4_k_m.gguf] [--cpu-only]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
if [ ! -f target/wllama/node_modules/@wllama/wllama/esm/index.js ]; then
  mkdir -p target/wllama
  npm install --prefix target/wllama --no-audit --no-fund @wllama/wllama@3.8.1
fi
[ -f dist/index.html ] || cargo xtask build-web
cargo build --release --locked -p tokscope-cli
cargo run --release --locked -p tokscope-e2e --example vs_wllama -- \
  "$PWD/target/wllama/node_modules/@wllama/wllama" "$@"

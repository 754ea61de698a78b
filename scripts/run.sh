#!/usr/bin/env bash
# Sets everything up, builds tokscope (release) and runs the default model: a chat reply, then
# the decode benchmark. Usage: scripts/run.sh ["your prompt"]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build --release --locked -p tokscope-cli
model=public/models/SmolLM2-135M-Instruct.Q4_1.gguf
prompt=${1:-"Explain in two sentences why generating text is limited by memory bandwidth."}
./target/release/tokscope generate --model "$model" --chat --prompt "$prompt" --max-tokens 128
./target/release/tokscope bench --model "$model"

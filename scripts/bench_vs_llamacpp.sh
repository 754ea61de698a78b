#!/usr/bin/env bash
# tokscope's CPU engine and llama.cpp side by side on the same GGUF and thread count, in
# alternating rounds (this machine is shared and noisy: compare the ratio, not the absolutes).
# Needs llama-cpp-python in $LLAMA_PY's environment (see scripts/llamacpp_reference.py).
# Usage: scripts/bench_vs_llamacpp.sh [MODEL] [THREADS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-public/models/SmolLM2-135M-Instruct.Q4_1.gguf}
threads=${2:-2}
rounds=${3:-3}
py=${LLAMA_PY:-/tmp/llamaenv/bin/python}
cargo build --release --locked -q -p tokscope-cli
field() { python3 -c "import json,sys; print('%.1f' % json.load(sys.stdin)['$1'])"; }
printf "%-6s %-12s %12s %12s\n" round engine "decode tok/s" "prefill tok/s"
for r in $(seq "$rounds"); do
  ours=$(./target/release/tokscope --threads "$threads" bench --model "$model" --tokens 128 --runs 5 --json)
  theirs=$("$py" scripts/llamacpp_bench.py "$model" "$threads" 128 5 2>/dev/null | tail -1)
  od=$(field decode_tok_s <<<"$ours"); op=$(field prefill_tok_s <<<"$ours")
  td=$(field decode_tok_s <<<"$theirs"); tp=$(field prefill_tok_s <<<"$theirs")
  printf "%-6s %-12s %12s %12s\n" "$r" tokscope "$od" "$op"
  printf "%-6s %-12s %12s %12s\n" "$r" llama.cpp "$td" "$tp"
  python3 -c "print('%-6s %-12s %11.2fx %11.2fx' % ('$r', 'ratio', $od / $td, $op / $tp))"
done

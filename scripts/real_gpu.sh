#!/usr/bin/env bash
# The prepared check for a machine with a real GPU (issue #3): everything it measures comes out
# in one run, so the ratios are side by side. Nothing else depends on it.
#   1. the adapters Vulkan offers, then `tokscope probe` and `tokscope bench --backend gpu` on the
#      first hardware one (decode, prefill, bytes per token, probe GB/s, MBU, dispatches per token,
#      time per kernel class), then the precision sweep and the batch sweep (B = 1…16: aggregate
#      tok/s at B = 8 against B = 1 is the throughput-vs-latency proof);
#   2. llama.cpp built for that GPU, when `llama-bench` is on PATH (or $LLAMA_BENCH): the same GGUF,
#      all layers offloaded, 128-token prefill and decode;
#   3. headless Chromium with hardware WebGPU: the adapter it reports, then tokscope's page and
#      wllama side by side (scripts/vs_wllama.sh, which forces tokscope's WebGPU engine).
# Usage: scripts/real_gpu.sh [MODEL]    (output also saved under target/real_gpu/)
set -uo pipefail
cd "$(dirname "$0")/.."
model=${1:-public/models/SmolLM2-135M-Instruct.Q4_1.gguf}
out=target/real_gpu
mkdir -p "$out"
exec > >(tee "$out/report.txt") 2>&1
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
scripts/setup.sh || exit 1
step() { echo; echo "== $* =="; }

step "Vulkan devices"
command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E "deviceName|deviceType|driverName" || echo "(no vulkaninfo)"
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv 2>/dev/null || true

cargo build --release --locked -q -p tokscope-cli || exit 1
bin=target/release/tokscope
# wgpu picks the high-performance adapter first; make sure it is not a CPU one.
step "tokscope probe"
$bin probe --json | tee "$out/probe.json"
$bin probe
step "tokscope bench --backend gpu"
$bin bench --model "$model" --backend gpu --tokens 128 --runs 5 --json | tee "$out/bench.json"
$bin bench --model "$model" --backend gpu --tokens 128 --runs 5
step "precision sweep (GPU)"
$bin bench --model "$model" --backend gpu --sweep precision --tokens 64 --runs 3
step "batch sweep (GPU)"
$bin bench --model "$model" --backend gpu --sweep batch --tokens 64 --runs 3 --json | tee "$out/batch.json"
python3 - "$out/batch.json" <<'PY'
import json, sys
rows = {r["batch"]: r for r in json.load(open(sys.argv[1]))["rows"]}
if 1 in rows and 8 in rows:
    print(f"aggregate tok/s at batch 8 / batch 1: {rows[8]['aggregate_tok_s'] / rows[1]['aggregate_tok_s']:.2f}x (target >= 4)")
PY

step "llama.cpp on the GPU"
llama_bench=${LLAMA_BENCH:-$(command -v llama-bench || true)}
if [ -n "$llama_bench" ]; then
  "$llama_bench" -m "$model" -ngl 99 -p 128 -n 128 -r 5 -o json | tee "$out/llamacpp.json"
  python3 - "$out/bench.json" "$out/llamacpp.json" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))
runs = json.load(open(sys.argv[2]))
tg = [r["avg_ts"] for r in runs if r.get("n_gen", 0) > 0]
pp = [r["avg_ts"] for r in runs if r.get("n_prompt", 0) > 0]
if tg:
    print(f"decode  tokscope {ours['decode_tok_s']:.1f} tok/s, llama.cpp {tg[0]:.1f}: {ours['decode_tok_s'] / tg[0]:.2f}x")
if pp:
    print(f"prefill tokscope {ours['prefill_tok_s']:.1f} tok/s, llama.cpp {pp[0]:.1f}: {ours['prefill_tok_s'] / pp[0]:.2f}x")
PY
else
  echo "llama-bench not found: build llama.cpp with -DGGML_CUDA=ON (or Vulkan) and set LLAMA_BENCH"
fi

step "Chromium WebGPU adapter"
cargo xtask build-web >/dev/null 2>&1 || echo "cargo xtask build-web failed"
cargo run --release --locked -q -p tokscope-e2e --example adapter_info
step "tokscope page vs wllama in Chromium"
scripts/vs_wllama.sh
echo; echo "report: $out/report.txt"

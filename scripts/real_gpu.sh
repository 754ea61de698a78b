#!/usr/bin/env bash
# The prepared check for a machine with a real GPU (issues #3, #19): everything it measures comes
# out in one run, so the ratios are side by side. Nothing else depends on it.
#   1. the adapters Vulkan offers, `tokscope probe`, then `tokscope bench --backend gpu` on
#      SmolLM2 135M (the default file, or its exact shapes in random weights where the file cannot
#      be fetched), Gemma 3 270M (gemma3: Q4_K with Q5_0 rows and a Q8_0 262k head), Llama 3.2 1B
#      and Llama 3.1 8B shaped models (`synth-model`): decode, prefill,
#      bytes per token, probe GB/s, MBU, dispatches per token, time per kernel class, the floor
#      model and measured ÷ floor; then the precision and batch sweeps on SmolLM2 (aggregate
#      tok/s at B = 8 against B = 1 is the throughput-vs-latency proof);
#   2. llama.cpp built for that GPU, when `llama-bench` is on PATH (or $LLAMA_BENCH): the same
#      GGUFs, all layers offloaded, 128-token prefill and decode, and the ratios;
#   3. where Chromium is installed: the adapter its WebGPU reports, then tokscope's page and
#      wllama side by side (scripts/vs_wllama.sh, which forces tokscope's WebGPU engine).
#
# A lent machine reaches no network and may have no Rust: build the binaries here first with
#   scripts/real_gpu.sh --prepare          (stripped, into target/real_gpu_bin: a few MB)
# and run there, carrying target/real_gpu_bin:
#   TOKSCOPE_BIN_DIR=target/real_gpu_bin scripts/real_gpu.sh
# Usage: scripts/real_gpu.sh [MODEL]    (output also saved under target/real_gpu/)
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
step() { echo; echo "== $* =="; }

if [ "${1:-}" = "--prepare" ]; then
  cargo build --release --locked -q -p tokscope-cli -p xtask || exit 1
  mkdir -p target/real_gpu_bin
  for b in tokscope xtask; do strip -o "target/real_gpu_bin/$b" "target/release/$b" || exit 1; done
  ls -la target/real_gpu_bin
  exit 0
fi

out=target/real_gpu
models=$out/models
mkdir -p "$out" "$models"
exec > >(tee "$out/report.txt") 2>&1

if [ -n "${TOKSCOPE_BIN_DIR:-}" ]; then
  bin=$TOKSCOPE_BIN_DIR/tokscope
  synth() { "$TOKSCOPE_BIN_DIR/xtask" synth-model "$@"; }
else
  scripts/setup.sh || exit 1
  cargo build --release --locked -q -p tokscope-cli -p xtask || exit 1
  bin=target/release/tokscope
  synth() { target/release/xtask synth-model "$@"; }
fi

step "Vulkan devices"
command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E "deviceName|deviceType|driverName" || echo "(no vulkaninfo)"
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv 2>/dev/null || true

smollm2=${1:-public/models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ ! -f "$smollm2" ]; then
  echo "($smollm2 is not here: SmolLM2's exact shapes and types in random weights instead)"
  smollm2=$models/smollm2-135m.Q4_1.gguf
  synth --shape smollm2-135m --type q4_1 "$smollm2" >/dev/null || exit 1
fi
synth --shape gemma3-270m --type q4_k "$models/gemma3-270m.Q4_K.gguf" >/dev/null || exit 1
synth --shape llama-3.2-1b --type q4_1 "$models/llama-3.2-1b.Q4_1.gguf" >/dev/null || exit 1
synth --shape llama-3.1-8b --type q4_0 "$models/llama-3.1-8b.Q4_0.gguf" >/dev/null || exit 1

# wgpu picks the high-performance adapter first; make sure it is not a CPU one.
step "tokscope probe"
$bin probe --json > "$out/probe.json"
$bin probe

for m in "$smollm2" "$models/gemma3-270m.Q4_K.gguf" "$models/llama-3.2-1b.Q4_1.gguf" "$models/llama-3.1-8b.Q4_0.gguf"; do
  name=$(basename "$m" .gguf)
  step "tokscope bench --backend gpu: $name"
  $bin bench --model "$m" --backend gpu --tokens 128 --runs 5 --json > "$out/bench-$name.json"
  $bin bench --model "$m" --backend gpu --tokens 128 --runs 5
done
python3 - "$out"/bench-*.json <<'PY'
import json, sys
print()
print(f"{'model':<34} {'decode tok/s':>12} {'MBU':>6} {'floor tok/s':>11} {'measured/floor':>14} {'dispatches':>10}")
for path in sys.argv[1:]:
    try:
        b = json.load(open(path))
    except Exception as e:
        print(f"{path}: no result ({e})"); continue
    f = b.get("floor") or {}
    print(f"{path.split('bench-')[-1][:-5]:<34} {b['decode_tok_s']:>12.1f} {b.get('mbu') or 0:>6.3f} "
          f"{f.get('tok_s', 0):>11.1f} {b.get('floor_ratio') or 0:>14.2f} {b.get('dispatches_per_token') or 0:>10}")
PY

step "precision sweep (GPU): $smollm2"
$bin bench --model "$smollm2" --backend gpu --sweep precision --tokens 64 --runs 3
step "batch sweep (GPU): $smollm2"
$bin bench --model "$smollm2" --backend gpu --sweep batch --tokens 64 --runs 3 --json > "$out/batch.json"
python3 - "$out/batch.json" <<'PY'
import json, sys
rows = {r["batch"]: r for r in json.load(open(sys.argv[1]))["rows"]}
for b, r in sorted(rows.items()):
    print(f"batch {b:>2}: {r['aggregate_tok_s']:.1f} tok/s aggregate")
if 1 in rows and 8 in rows:
    print(f"aggregate tok/s at batch 8 / batch 1: {rows[8]['aggregate_tok_s'] / rows[1]['aggregate_tok_s']:.2f}x (target >= 4)")
PY

step "llama.cpp on the GPU"
llama_bench=${LLAMA_BENCH:-$(command -v llama-bench || true)}
if [ -n "$llama_bench" ]; then
  for m in "$smollm2" "$models/llama-3.1-8b.Q4_0.gguf"; do
    name=$(basename "$m" .gguf)
    "$llama_bench" -m "$m" -ngl 99 -p 128 -n 128 -r 5 -o json > "$out/llamacpp-$name.json"
    python3 - "$out/bench-$name.json" "$out/llamacpp-$name.json" "$name" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))
runs = json.load(open(sys.argv[2]))
tg = [r["avg_ts"] for r in runs if r.get("n_gen", 0) > 0]
pp = [r["avg_ts"] for r in runs if r.get("n_prompt", 0) > 0]
if tg:
    print(f"{sys.argv[3]}: decode  tokscope {ours['decode_tok_s']:.1f} tok/s, llama.cpp {tg[0]:.1f}: {ours['decode_tok_s'] / tg[0]:.2f}x")
if pp:
    print(f"{sys.argv[3]}: prefill tokscope {ours['prefill_tok_s']:.1f} tok/s, llama.cpp {pp[0]:.1f}: {ours['prefill_tok_s'] / pp[0]:.2f}x")
PY
  done
else
  echo "llama-bench not found: build llama.cpp with -DGGML_CUDA=ON (or Vulkan) and set LLAMA_BENCH"
fi

if [ -z "${TOKSCOPE_BIN_DIR:-}" ] && command -v chromium >/dev/null; then
  step "Chromium WebGPU adapter"
  cargo xtask build-web >/dev/null 2>&1 || echo "cargo xtask build-web failed"
  cargo run --release --locked -q -p tokscope-e2e --example adapter_info
  step "tokscope page vs wllama in Chromium"
  scripts/vs_wllama.sh
else
  step "Chromium: not run (no chromium here, or prebuilt binaries only)"
fi
echo; echo "report: $out/report.txt"

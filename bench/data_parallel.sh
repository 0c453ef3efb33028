#!/usr/bin/env bash
# Benchmark (not a test): data-parallel scaling on one machine. GPT-2 small at batch 4 x seq
# 64 (models/gpt2.lm --preset gpt2_b4t64) trained three ways on the same global batch:
#   1 process x 1 thread, 1 process x 2 threads, and 2 ranks x 1 thread (mpirun, --mesh data=2),
# each for STEPS steps; prints the median tokens/s of steps 2..STEPS and the 2-rank run's
# efficiency against both (tokens/s over 2 x the 1 x 1 rate, and over the 1 x 2 rate).
# Usage: bench/data_parallel.sh [steps]   (needs a build: scripts/build.sh; about 3 GB a rank)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-12}
out=runs/bench_dp
mkdir -p "$out"
[[ -f runs/fortunes/train.bin ]] || { mkdir -p runs && build/bin/lmrt data build --input /usr/share/games/fortunes --out runs/fortunes; }
build/bin/lmc compile models/gpt2.lm --preset gpt2_b4t64 -o "$out/one.plan" > /dev/null
build/bin/lmc compile models/gpt2.lm --preset gpt2_b4t64 --mesh data=2 -o "$out/dp.plan" > /dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
common=(--data runs/fortunes --steps "$steps" --eval-batches 0 --overwrite)
build/bin/lmrt run "$out/one.plan" "${common[@]}" --threads 1 --metrics "$out/1x1.jsonl" --out "$out/1x1.safetensors" > /dev/null
build/bin/lmrt run "$out/one.plan" "${common[@]}" --threads 2 --metrics "$out/1x2.jsonl" --out "$out/1x2.safetensors" > /dev/null
mpirun -np 2 --bind-to core build/bin/lmrt run "$out/dp.plan" "${common[@]}" --threads 1 --metrics "$out/2x1.jsonl" \
  --out "$out/2x1.safetensors" > /dev/null
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rate = {}
for run in ("1x1", "1x2", "2x1"):
    rows = [json.loads(l) for l in open(f"{out}/{run}.jsonl")][1:]
    rate[run] = statistics.median(r["tokens_per_s"] for r in rows)
for run, what in (("1x1", "1 process x 1 thread"), ("1x2", "1 process x 2 threads"), ("2x1", "2 ranks x 1 thread")):
    print(f"{what:24s} {rate[run]:8.1f} tok/s")
print(f"2 ranks x 1 thread: {rate['2x1'] / (2 * rate['1x1']) * 100:.0f} % of twice 1 x 1, "
      f"{rate['2x1'] / rate['1x2'] * 100:.0f} % of 1 x 2")
PY

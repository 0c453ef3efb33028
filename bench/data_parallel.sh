#!/usr/bin/env bash
# Benchmark (not a test): data-parallel scaling on one machine. GPT-2 small at batch 4 x seq
# 64 (models/gpt2.lm --preset gpt2_b4t64) trained three ways on the same global batch:
#   1 process x 1 thread, 1 process x 2 threads, and 2 ranks x 1 thread (mpirun, --mesh data=2),
# each for STEPS steps; prints the median tokens/s of steps 2..STEPS and the 2-rank run's
# efficiency against both (tokens/s over 2 x the 1 x 1 rate, and over the 1 x 2 rate).
# OVERLAP=0 runs the 2-rank runs with the collectives' overlap off (LMRT_OVERLAP_COLLECTIVES=0;
# by default on, as in lmrt).
# The 2-rank run is repeated for each gradient bucket size in $BUCKETS (MiB, default "25 0";
# docs/distributed.md, "Buckets and overlap").
# Usage: bench/data_parallel.sh [steps]   (needs a build: scripts/build.sh; about 3 GB a rank)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-12}
out=runs/bench_dp
mkdir -p "$out"
[[ -f runs/fortunes/train.bin ]] || { mkdir -p runs && build/bin/lmrt data build --input /usr/share/games/fortunes --out runs/fortunes; }
build/bin/lmc compile models/gpt2.lm --preset gpt2_b4t64 -o "$out/one.plan" > /dev/null
buckets=${BUCKETS:-25 0}
for b in $buckets; do
  build/bin/lmc compile models/gpt2.lm --preset gpt2_b4t64 --mesh data=2 --bucket-mb "$b" -o "$out/dp-$b.plan" > /dev/null
done
# Open MPI session directories under $out, not the $TMPDIR/ompi.<host>.<uid> other mpiruns
# create and remove at once (docs/distributed.md, "Several runs on one machine").
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_orte_tmpdir_base="$PWD/$out/ompi"
common=(--data runs/fortunes --steps "$steps" --eval-batches 0 --overwrite)
build/bin/lmrt run "$out/one.plan" "${common[@]}" --threads 1 --metrics "$out/1x1.jsonl" --out "$out/1x1.safetensors" > /dev/null
build/bin/lmrt run "$out/one.plan" "${common[@]}" --threads 2 --metrics "$out/1x2.jsonl" --out "$out/1x2.safetensors" > /dev/null
for b in $buckets; do
  mpirun -np 2 --bind-to core -x LMRT_OVERLAP_COLLECTIVES="${OVERLAP:-1}" build/bin/lmrt run "$out/dp-$b.plan" "${common[@]}" --threads 1 \
    --metrics "$out/2x1-$b.jsonl" --out "$out/2x1-$b.safetensors" > /dev/null
done
/usr/bin/python3 - "$out" $buckets <<'PY'
import json, statistics, sys
out, buckets = sys.argv[1], sys.argv[2:]
rate = {}
runs = [("1x1", "1 process x 1 thread"), ("1x2", "1 process x 2 threads")]
runs += [(f"2x1-{b}", f"2 ranks x 1 thread, bucket_mb {b}") for b in buckets]
for run, _ in runs:
    rows = [json.loads(l) for l in open(f"{out}/{run}.jsonl")][1:]
    rate[run] = statistics.median(r["tokens_per_s"] for r in rows)
for run, what in runs:
    print(f"{what:36s} {rate[run]:8.1f} tok/s")
for b in buckets:
    r = rate[f"2x1-{b}"]
    print(f"2 ranks x 1 thread, bucket_mb {b}: {r / (2 * rate['1x1']) * 100:.0f} % of twice 1 x 1, "
          f"{r / rate['1x2'] * 100:.0f} % of 1 x 2")
PY

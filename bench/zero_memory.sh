#!/usr/bin/env bash
# Benchmark (not a test): each rank's peak resident memory (/usr/bin/time) of GPT-2 small
# (models/gpt2.lm --preset gpt2_b4t64, -D batch=8) on 2 ranks x 1 thread under DP and ZeRO
# stages 1, 2 and 3, STEPS steps each, with lmc's predicted per-rank peak beside it
# (docs/distributed.md, "Memory per rank").
# Usage: bench/zero_memory.sh [steps] [stages]   e.g. bench/zero_memory.sh 3 "1 2"
#   BIN=dir picks the lmc and lmrt to run (default build/bin), to compare two builds.
# Needs a build (scripts/build.sh) and about 2.5 GB a rank.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-3}
stages=${2:-"0 1 2 3"}
bin=${BIN:-build/bin}
out=runs/bench_zero_memory
mkdir -p "$out"
[[ -f runs/fortunes/train.bin ]] || { mkdir -p runs && "$bin/lmrt" data build --input /usr/share/games/fortunes --out runs/fortunes; }
# Open MPI session directories under $out, not the $TMPDIR/ompi.<host>.<uid> other mpiruns
# create and remove at once (docs/distributed.md, "Several runs on one machine").
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_orte_tmpdir_base="$PWD/$out/ompi"
for z in $stages; do
  "$bin/lmc" compile models/gpt2.lm --preset gpt2_b4t64 -D batch=8 --mesh data=2 --zero "$z" -o "$out/z$z.plan" \
    2> "$out/z$z.lmc"
  mpirun -np 2 --bind-to core sh -c '/usr/bin/time -f %M -o "$0-$OMPI_COMM_WORLD_RANK" "$@"' "$out/rss-z$z" \
    "$bin/lmrt" run "$out/z$z.plan" --data runs/fortunes --steps "$steps" --eval-batches 0 --threads 1 \
    --overwrite --out "$out/z$z.safetensors" > "$out/z$z.log"
  rss0=$(tail -1 "$out/rss-z$z-0"); rss1=$(tail -1 "$out/rss-z$z-1")
  predicted=$(grep -o 'predicted peak memory [^(]*' "$out/z$z.lmc" | head -1)
  grads=$(grep -o 'gradients [0-9.]* [KMG]iB' "$out/z$z.lmc" | head -1)
  printf 'zero %s: peak RSS rank 0 %d MiB, rank 1 %d MiB; lmc: %s, %s\n' "$z" $((rss0 / 1024)) $((rss1 / 1024)) \
    "$predicted" "$grads"
done

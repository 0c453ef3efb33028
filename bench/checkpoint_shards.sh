#!/usr/bin/env bash
# Benchmark (not a test): sharded against gathered (whole) checkpoints of GPT-2 small
# (models/gpt2.lm --preset gpt2_b4t64) under ZeRO-1 on 2 ranks x 1 thread. Each format
# trains STEPS steps with a checkpoint after every step; prints each rank's peak resident
# memory (/usr/bin/time) and rank 0's median checkpoint write time (--profile's
# "written in" lines), and the same run without checkpoints for the baseline peak.
# Usage: bench/checkpoint_shards.sh [steps]   (needs a build: scripts/build.sh; about 4 GB a rank)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-3}
out=runs/bench_ckpt
mkdir -p "$out"
[[ -f runs/fortunes/train.bin ]] || { mkdir -p runs && build/bin/lmrt data build --input /usr/share/games/fortunes --out runs/fortunes; }
build/bin/lmc compile models/gpt2.lm --preset gpt2_b4t64 --mesh data=2 --zero 1 -o "$out/z1.plan" > /dev/null
# Open MPI session directories under $out, not the $TMPDIR/ompi.<host>.<uid> other mpiruns
# create and remove at once (docs/distributed.md, "Several runs on one machine").
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_orte_tmpdir_base="$PWD/$out/ompi"
for fmt in none sharded whole; do
  rm -rf "$out/ck-$fmt"
  ck=()
  [[ $fmt == none ]] || ck=(--checkpoint-dir "$out/ck-$fmt" --checkpoint-every 1 --keep 1 --checkpoint-format "$fmt")
  mpirun -np 2 --bind-to core sh -c '/usr/bin/time -f %M -o "$0-$OMPI_COMM_WORLD_RANK" "$@"' "$out/rss-$fmt" \
    build/bin/lmrt run "$out/z1.plan" --data runs/fortunes --steps "$steps" --eval-batches 0 --threads 1 --profile \
    --overwrite --out "$out/$fmt.safetensors" "${ck[@]}" > "$out/$fmt.log"
done
/usr/bin/python3 - "$out" <<'PY'
import re, statistics, sys
out = sys.argv[1]
for fmt in ("none", "sharded", "whole"):
    rss = [int(open(f"{out}/rss-{fmt}-{r}").read().split()[-1]) * 1024 for r in (0, 1)]
    times = [float(t) for t in re.findall(r"written in ([0-9.]+) s", open(f"{out}/{fmt}.log").read())]
    write = f"checkpoint write {statistics.median(times):.2f} s (median of {len(times)})" if times else "no checkpoints"
    print(f"{fmt:8s} peak RSS rank 0 {rss[0] / 2**20:7.0f} MiB, rank 1 {rss[1] / 2**20:7.0f} MiB; {write}")
PY

#!/usr/bin/env bash
# Benchmark: the tiny GPT of the demo trained by lmrt and by PyTorch eager, same model,
# same recipe, same shards, same machine, one after the other. Usage: bench/gpt_tiny.sh [steps]
# Prints both tokens/s and validation losses. Needs a build (scripts/build.sh) and python3-torch.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-2000}
mkdir -p runs
[[ -f runs/fortunes/train.bin ]] || { mkdir -p runs && build/bin/lmrt data build --input /usr/share/games/fortunes --out runs/fortunes; }
build/bin/lmc compile models/gpt2.lm --preset tiny -o runs/bench_gpt_tiny.plan
start=$(date +%s.%N)
build/bin/lmrt run runs/bench_gpt_tiny.plan --data runs/fortunes --steps "$steps" --eval-interval "$steps" \
  --metrics runs/bench_gpt_tiny.jsonl --overwrite --out runs/bench_gpt_tiny.safetensors | tail -n 3
end=$(date +%s.%N)
/usr/bin/python3 - "$steps" "$start" "$end" runs/bench_gpt_tiny.jsonl <<'PY'
import json, sys
steps, t0, t1, path = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rows = [json.loads(l) for l in open(path)]
tok = sum(1 for _ in rows) * 12 * 64
val = [r["val_loss"] for r in rows if "val_loss" in r]
print(f"lmrt: {steps} steps in {t1 - t0:.1f} s (wall, incl. startup), {tok / (t1 - t0):.0f} tok/s, val_loss {val[-1]:.4f}")
PY
/usr/bin/python3 bench/torch_train_gpt.py --data runs/fortunes --steps "$steps" | tail -n 1

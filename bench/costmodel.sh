#!/usr/bin/env bash
# The cost model benchmark (docs/explain.md, "Predicted step time"): for every zoo
# model's tiny preset and GPT-2 small at batch 4 x seq 64, lmc explain's predicted
# step time against the measured median step time of lmrt run, as a table.
# Usage: bench/costmodel.sh [--machine FILE] [--rounds N] [--models gpt2,llama,...]
#   (without --machine it first runs `lmrt calibrate` into runs/costmodel/machine.json,
#   so the rates and the steps are measured under the same load)
# Run it on a quiet machine (other engineers: hold /tmp/lmc-build.lock around it);
# about 3 minutes on 2 cores. A benchmark, not a test: nothing here asserts a timing.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bin/lmrt && -x build/bin/lmc ]] || {
  echo "costmodel: build first (scripts/build.sh)" >&2
  exit 1
}
[[ -f runs/fortunes/train.bin ]] || { mkdir -p runs && build/bin/lmrt data build --input /usr/share/games/fortunes --out runs/fortunes >&2; }
exec /usr/bin/python3 bench/costmodel.py "$@"

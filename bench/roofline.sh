#!/usr/bin/env bash
# The CPU roofline benchmark: nano, tiny, GPT-2 small at (batch 4, seq 64) and (batch 1, seq 1024),
# each trained by lmrt and by PyTorch, next to oneDNN's sgemm rate (lmrt_sgemm_rate) measured in the same run.
# Prints one JSON line per (config, implementation); see bench/roofline.py.
# Usage: bench/roofline.sh [--quick] [--threads N] [--configs nano,tiny] [--rounds R] [--no-torch]
#                          [--torch-modes eager,compile,autocast,compile-autocast] [--data DIR]
#          (PyTorch 2 from PyPI in a venv of the benchmark's own: bench/setup-torch2.sh, once)
#        bench/roofline.sh --device cuda [--precisions f32,tf32] [--torch-modes eager,compile] [--quick]
#          (GPU: GPT-2 124M, batch 8 x seq 1024, vs PyTorch eager / torch.compile; scripts/gpu-check.sh
#          runs it from the GPU bundle)
# Needs a build (scripts/build.sh) and python3-torch; about 5 minutes on 2 cores (--quick: about 3).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bin/lmrt && -x build/bin/lmc && -x build/bin/lmrt_sgemm_rate ]] || {
  echo "roofline: build first (scripts/build.sh)" >&2
  exit 1
}
# The default data (roofline.py's --data): the fortunes, built once.
if [[ " $* " != *" --data"* && ! -f runs/fortunes/train.bin ]]; then
  mkdir -p runs && build/bin/lmrt data build --input /usr/share/games/fortunes --out runs/fortunes >&2
fi
exec /usr/bin/python3 bench/roofline.py "$@"

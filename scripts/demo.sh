#!/usr/bin/env bash
# The demo: set up, build, turn Debian's `fortunes` into byte-level shards, compile the
# tiny GPT, train it on the CPU, and print a sample. Usage: scripts/demo.sh [steps]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-2000}
scripts/setup.sh
scripts/build.sh
bin=build/bin
mkdir -p runs
[[ -f runs/fortunes/train.bin ]] || $bin/lmrt data build --input /usr/share/games/fortunes --out runs/fortunes
$bin/lmc compile models/gpt2.lm --preset tiny -o runs/gpt_tiny.plan
$bin/lmrt run runs/gpt_tiny.plan --data runs/fortunes --steps "$steps" --eval-interval 250 --eval-batches 40 \
  --metrics runs/gpt_tiny.metrics.jsonl --overwrite --out runs/gpt_tiny.safetensors
$bin/lmrt sample runs/gpt_tiny.plan --weights runs/gpt_tiny.safetensors --prompt "The " --tokens 300

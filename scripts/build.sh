#!/usr/bin/env bash
# Configures (once) and builds LMC into ./build with Ninja + ccache.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LMC_BUILD_DIR:-build}
if [[ ! -f $build/build.ninja ]]; then
  cmake -G Ninja -S . -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py
fi
cmake --build "$build" -- -j"$(nproc)"

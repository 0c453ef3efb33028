#!/usr/bin/env bash
# Sets up (with the PyTorch reference), builds, and runs every test: lit (dialect,
# frontend, autodiff, codegen, gradient checks, end to end) and the GoogleTest units.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
scripts/build.sh
cd build
# setup --test installed PyTorch and numpy: the reference tests must run, not skip.
export LMC_REQUIRE_REFERENCE=1
# CI machines have nvcc: every generated CUDA kernel must be compiled there, not skipped.
[[ "${CI:-}" == true ]] && export LMC_REQUIRE_NVCC=1
ctest --output-on-failure --timeout 1800

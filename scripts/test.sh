#!/usr/bin/env bash
# Sets up (with the PyTorch reference), builds, and runs every test: lit (dialect,
# frontend, autodiff, codegen, gradient checks, end to end) and the GoogleTest units;
# then every fuzz target for 30 s (scripts/fuzz.sh: a clang build of its own in
# build-fuzz; LMC_FUZZ_SECONDS changes the time, 0 leaves the fuzzers out).
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
cd ..
fuzz_seconds=${LMC_FUZZ_SECONDS:-30}
if ((fuzz_seconds > 0)); then
  scripts/fuzz.sh "$fuzz_seconds"
fi

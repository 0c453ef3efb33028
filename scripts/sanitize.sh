#!/usr/bin/env bash
# Builds lmrt with AddressSanitizer or ThreadSanitizer (in build-asan/ or build-tsan/,
# the CUDA backend left out) and runs the preemption loop on it: RUNS runs with one
# SIGTERM and RUNS with two (scripts/signal-loop.sh), on a tiny GPT checkpointing every
# step. This is how the heap corruption of a signal handler inside oneDNN's JIT GEMMs
# was found (runtime/train/signals.h); run it after touching signals, checkpoints or
# the loop.
# Usage: scripts/sanitize.sh [asan|tsan] [RUNS]   (default asan, 100; needs scripts/build.sh's lmc)
#   tsan builds with clang-19 (GCC 12's TSan runtime crashes at start on this kernel's
#   address-space layout) and suppresses reports inside the uninstrumented OpenMP
#   runtime and oneDNN (scripts/tsan.supp).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=asan
if [[ ${1:-} == asan || ${1:-} == tsan ]]; then kind=$1; shift; fi
runs=${1:-100}
build=build-$kind
if [[ ! -f $build/build.ninja ]]; then
  if [[ $kind == asan ]]; then
    flags="-fsanitize=address -fno-omit-frame-pointer" link="-fsanitize=address"
  else
    command -v clang++-19 > /dev/null || { echo "sanitize.sh tsan needs clang-19 (apt-get install clang-19)" >&2; exit 1; }
    export CC=clang-19 CXX=clang++-19
    flags="-fsanitize=thread" link="-fsanitize=thread"
  fi
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLMC_ENABLE_CUDA=OFF \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py \
    "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$link"
fi
cmake --build "$build" --target lmrt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build/bin/lmrt data build --input /usr/share/games/fortunes/wisdom /usr/share/games/fortunes/people \
  --out "$work/data" > /dev/null
build/bin/lmc compile models/gpt2.lm --preset tiny -D layers=2 -D batch=4 -D seq=32 -o "$work/gpt.plan" 2> /dev/null
# detect_stack_use_after_return=0: ASan's fake stack frames are not async-signal-safe.
export ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=0
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:suppressions=$PWD/scripts/tsan.supp"
status=0
for signals in 1 2; do
  scripts/signal-loop.sh "$build/bin/lmrt" "$work/gpt.plan" "$work/data" "$runs" "$signals" "$work/loop$signals" ||
    status=1
done
exit $status

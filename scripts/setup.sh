#!/usr/bin/env bash
# Installs every system package LMC needs to build, run and test (idempotent).
# Usage: scripts/setup.sh [--test] [--fuzz]
#   --test adds the PyTorch reference for parity tests, and Hugging Face transformers
#          4.46.3 in a venv over the system Python: $LMC_HF_VENV, by default
#          ~/.cache/lmc/venv-hf; PyPI must be reachable the first time. It implies
#          --fuzz, since scripts/test.sh runs the fuzzers too.
#   --fuzz adds clang 19 with libFuzzer and the sanitizer runtimes, and its OpenMP
#          (scripts/fuzz.sh, docs/fuzzing.md)
set -euo pipefail

want_test=0 want_fuzz=0
for arg in "$@"; do
  case $arg in
    --test) want_test=1 want_fuzz=1 ;;
    --fuzz) want_fuzz=1 ;;
    *) echo "usage: scripts/setup.sh [--test] [--fuzz]" >&2; exit 2 ;;
  esac
done

pkgs=(
  cmake ninja-build ccache g++ pkg-config lld                # lld: links the MLIR-side tools several times faster
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools   # MLIR 19 (Debian bookworm: 19.1.7)
  libprotobuf-dev protobuf-compiler                         # the plan format
  libssl-dev openssl                                        # plan signatures and kernel digests (libcrypto; keys: openssl genpkey)
  libcli11-dev                                              # command lines
  libopenblas-dev libdnnl-dev                               # CPU GEMMs (f64, f32); threads: GCC's libgomp
  libgtest-dev                                              # unit tests
  libsentencepiece-dev                                      # tokenizers (lmrt data tokenizer train)
  fortunes-min fortunes                                     # the demo corpus (English quotations)
  openmpi-bin libopenmpi-dev                                # distributed training: mpirun and MPI collectives (docs/distributed.md)
)
[[ $want_test == 1 ]] && pkgs+=(python3 python3-numpy python3-torch python3-venv)
# The fuzz build (build-fuzz): clang and its runtimes from the same LLVM 19 as MLIR.
# libomp-19-dev is clang's OpenMP (the kernels include omp.h); it replaces Debian's
# libomp-dev (LLVM 14), which the GCC build never used: GCC has its own libgomp.
[[ $want_fuzz == 1 ]] && pkgs+=(clang-19 libclang-rt-19-dev libomp-19-dev python3)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) != 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# TensorBoard's own reader checks lmrt's event files (test/E2E/tensorboard.test): the
# `tensorboard` package from PyPI, in a venv that also sees Debian's numpy. scikit-learn
# and scipy, in the same venv, score the predictions `lmrt metrics` scores
# (test/Runtime/metrics-sklearn.test); these versions build on Debian 12's numpy 1.24.
if [[ $want_test == 1 ]]; then
  venv=${LMC_TEST_VENV:-$HOME/.cache/lmc/venv-test}
  if ! "$venv/bin/python" -c 'import tensorboard' 2>/dev/null; then
    echo "setup: installing tensorboard into $venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q tensorboard==2.21.0
  fi
  if ! "$venv/bin/python" -c 'import sklearn, scipy' 2>/dev/null; then
    echo "setup: installing scikit-learn and scipy into $venv"
    "$venv/bin/pip" install -q scikit-learn==1.3.2 scipy==1.11.4
  fi
fi

# Debian's MLIR 19 is what the build is written against; fail early with a clear message otherwise.
ver=$(/usr/lib/llvm-19/bin/llvm-config --version 2>/dev/null || true)
[[ "$ver" == 19.* ]] || { echo "setup: expected LLVM/MLIR 19 under /usr/lib/llvm-19, found '${ver:-nothing}'" >&2; exit 1; }
# The Hugging Face reference (test/E2E/llama-hf-parity.test): transformers 4.46.3 works
# with Debian's PyTorch 1.13, in a venv that sees the system's torch and numpy.
if [[ $want_test == 1 ]]; then
  venv=${LMC_HF_VENV:-$HOME/.cache/lmc/venv-hf}
  if ! "$venv/bin/python" -c 'import transformers, sys; sys.exit(transformers.__version__ != "4.46.3")' 2>/dev/null; then
    echo "setup: installing transformers 4.46.3 into $venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q transformers==4.46.3
  fi
fi
echo "setup: ok (LLVM/MLIR $ver)"

#!/usr/bin/env bash
# The benchmark's PyTorch 2: a venv of its own (not the tests' Debian PyTorch 1.13, which stays the
# parity oracle's runtime), with a pinned PyTorch from PyPI. bench/roofline.sh finds it at
# $LMC_TORCH2_VENV (default ~/.cache/lmc/venv-torch2). Idempotent; about 3 GB (PyPI's Linux
# wheel brings its CUDA libraries, unused here).
# Usage: bench/setup-torch2.sh
set -euo pipefail
version=${LMC_TORCH2_VERSION:-2.15.0}
venv=${LMC_TORCH2_VENV:-$HOME/.cache/lmc/venv-torch2}
if "$venv/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$version')" 2>/dev/null; then
  echo "setup-torch2: torch $version already in $venv"
  exit 0
fi
echo "setup-torch2: installing torch $version into $venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q "torch==$version" numpy
"$venv/bin/python" -c "import torch; print('setup-torch2: torch', torch.__version__, 'threads', torch.get_num_threads())"

#!/usr/bin/env bash
# Tests a GPU bundle here, as far as a machine without a GPU can (docs/gpu-check.md):
# runs scripts/gpu-check.sh on it in an empty environment (env -i: none of this machine's
# LD_LIBRARY_PATH, a PATH of /usr/bin:/bin only), which unpacks it into a fresh folder,
# and holds the summary to what a machine without a GPU must give: nothing failed; ldd
# finds every library of every bundled binary inside the bundle (or glibc, CUDA 13);
# lmrt --help, the CUDA kernel-table test and a CPU training run of a bundled plan pass;
# lmrt_cuda_gpu_test ran its CPU halves and skipped its GPU halves; the dry run of every
# GPU lit test passed on the CPU, through the bundle's lit, FileCheck stand-in and
# replayed plans; the benchmark and the GPU runs are reported as skipped.
# Usage: scripts/gpu-bundle-test.sh [BUNDLE]   (default .gpu/lmc-gpu-bundle.tar.xz); about 30 s.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=$(realpath "${1:-.gpu/lmc-gpu-bundle.tar.xz}")
[[ -f $bundle ]] || { echo "gpu-bundle-test: no bundle at $bundle (scripts/gpu-bundle.sh makes it)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lmc-gpu-bundle-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
set +e
env -i PATH=/usr/bin:/bin HOME="$tmp" TMPDIR="$tmp" bash scripts/gpu-check.sh "$bundle" "$tmp/logs" > /dev/null 2>&1
rc=$?
set -e
summary=$tmp/logs/summary.txt
[[ -f $summary ]] || { echo "gpu-bundle-test: gpu-check.sh wrote no summary (exit code $rc)" >&2; exit 1; }
cat "$summary"
tests=$(tar -xJOf "$bundle" lmc-gpu-bundle/MANIFEST.json | python3 -c 'import json, sys
print(sum(1 for f in json.load(sys.stdin)["files"] if f.startswith("src/test/GPU/") and f.endswith(".test")))')
expect=(
  "^totals: [0-9]+ passed, 0 failed"
  "^PASS  ldd: every bundled binary and library finds its libraries"
  "^PASS  lmrt --help"
  "^PASS  lmrt run \(CPU, 5 steps"
  "^PASS  lmrt_cuda_table_test"
  "^SKIP  lmrt_cuda_gpu_test: [0-9]+ cases \(no GPU: the CPU half of each case ran"
  "^SKIP  lit test/GPU: no GPU \($tests tests; their dry run on the CPU passed $tests\)"
  "^SKIP  lmrt run --device cuda .*: no GPU"
  "^SKIP  benchmark: no GPU"
)
if grep -q '^PASS  lmrt devices' "$summary"; then  # a machine with a GPU: it all ran for real
  expect=("^totals: [0-9]+ passed, 0 failed")
fi
bad=0
for e in "${expect[@]}"; do
  grep -qE "$e" "$summary" || { echo "gpu-bundle-test: the summary has no line matching: $e" >&2; bad=1; }
done
((rc == 0)) || { echo "gpu-bundle-test: gpu-check.sh exited with $rc" >&2; bad=1; }
if ((bad)); then
  cp "$tmp/logs/gpu-check.log" "${TMPDIR:-/tmp}/lmc-gpu-bundle-test.log"
  echo "gpu-bundle-test: FAILED (the whole log: ${TMPDIR:-/tmp}/lmc-gpu-bundle-test.log)" >&2
  exit 1
fi
echo "gpu-bundle-test: ok ($(stat -c %s "$bundle") bytes, $tests GPU lit tests dry-run from the bundle)"

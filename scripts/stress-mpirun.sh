#!/usr/bin/env bash
# Stress of Open MPI's start-up with several mpiruns at once on one machine, as lit's
# parallel tests start them (test/lit.cfg.py's %mpirun). WORKERS loops run at once, each
# starting RUNS short `mpirun -np NP true` one after another, all under one fresh TMPDIR
# (as lit gives its tests); prints how many runs failed and why.
# Usage: scripts/stress-mpirun.sh [--shared] [WORKERS] [RUNS]   (default 2 x 200, NP=1)
#   By default each worker's mpiruns keep their session directories under a folder of
#   the worker's own (OMPI_MCA_orte_tmpdir_base), as %mpirun gives each test its %t.ompi:
#   no run should fail. --shared leaves Open MPI's default, every mpirun's session
#   directory in the one $TMPDIR/ompi.<host>.<uid>, which one mpirun creates while
#   another, ending, removes it. On a 2-core machine about 1 start in 2000 failed with 2
#   workers and nothing else running, 1 in 150-450 with the cores busy (more load, more
#   failures; many workers fewer: the folder then never empties).
set -euo pipefail
shared=0
if [[ ${1:-} == --shared ]]; then shared=1; shift; fi
workers=${1:-2}
runs=${2:-200}
np=${NP:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/stress-mpirun.XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
for w in $(seq "$workers"); do
  (
    ((shared)) || export OMPI_MCA_orte_tmpdir_base=$TMPDIR/worker-$w
    for r in $(seq "$runs"); do
      if ! mpirun -np "$np" --oversubscribe --bind-to none true > "$TMPDIR/out-$w" 2>&1; then
        echo "run $w.$r failed:" >> "$TMPDIR/failures"
        grep -m4 -e 'mkdir' -e 'Directory:' -e 'Error:' -e 'failed' "$TMPDIR/out-$w" >> "$TMPDIR/failures" || true
      fi
    done
  ) &
done
wait
failed=$(grep -c '^run ' "$TMPDIR/failures" 2> /dev/null || true)
echo "$(( workers * runs )) mpiruns ($workers at once, -np $np, $([[ $shared == 1 ]] && echo shared || echo own) session-dir base): ${failed:-0} failed"
[[ -s $TMPDIR/failures ]] && head -12 "$TMPDIR/failures"
[[ ${failed:-0} == 0 ]]

#!/usr/bin/env bash
# The preemption loop: `lmrt run` checkpointing every step is sent SIGTERM (and,
# with SIGNALS=2, a second one 0-40 ms later) at a random moment 0.2-1 s after its
# first checkpoint; every run must exit 0 with "stopped by SIGTERM", and its newest
# checkpoint must resume. (A signal before the training loop starts ends lmrt as the
# signal's default action would: there is nothing to save yet.)
# Usage: scripts/signal-loop.sh LMRT PLAN DATA RUNS SIGNALS [WORKDIR]
#   LMRT a built lmrt (also an AddressSanitizer one: scripts/sanitize.sh builds it).
# Prints one line per failed run and "signal loop: F of N runs failed"; exits 1 on any.
set -uo pipefail
lmrt=$1 plan=$2 data=$3 runs=$4 signals=$5
work=${6:-$(mktemp -d)}
mkdir -p "$work"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
failed=0
for i in $(seq 1 "$runs"); do
  ck=$work/ck$i log=$work/log$i
  rm -rf "$ck"
  "$lmrt" run "$plan" --data "$data" --steps 100000 --threads 1 --checkpoint-dir "$ck" --checkpoint-every 1 \
    --keep 2 --eval-batches 0 --out "$work/w$i.safetensors" > "$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    [[ -d $ck/step-00000001 ]] || ! kill -0 "$pid" 2> /dev/null && break
    sleep 0.05
  done
  sleep "0.$((RANDOM % 8 + 2))"
  kill -TERM "$pid"
  if [[ $signals == 2 ]]; then sleep "0.0$((RANDOM % 5))"; kill -TERM "$pid" 2> /dev/null; fi
  wait "$pid"
  rc=$?
  why=""
  if [[ $rc != 0 ]]; then why="exit status $rc"
  elif ! grep -q 'stopped by SIGTERM' "$log"; then why="no 'stopped by SIGTERM'"
  else
    newest=$(ls "$ck" | grep -E '^step-[0-9]+$' | tail -1)
    step=$((10#${newest#step-}))
    "$lmrt" run "$plan" --data "$data" --resume "$ck" --stop-at $((step + 1)) --eval-batches 0 \
      --out "$work/r$i.safetensors" > "$work/resume$i" 2>&1 || why="its newest checkpoint $newest did not resume"
  fi
  if [[ -n $why ]]; then failed=$((failed + 1)); echo "run $i: $why: $(tail -1 "$log")"; fi
  rm -rf "$ck"
done
echo "signal loop: $failed of $runs runs failed ($signals signal(s) each)"
[[ $failed == 0 ]]

#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 19, ASan, UBSan) in build-fuzz and runs each
# for SECONDS (default 30), failing on any crash, leak, timeout or out-of-memory.
# docs/fuzzing.md says what each target reads and how to add one.
#
# Usage: scripts/fuzz.sh [--build-only | --no-build] [-j N] [SECONDS] [TARGET...]
#   TARGET       lexer parser json plan shard megatron safetensors hf_config
#                checkpoint_meta (default: all)
#   --build-only configure and build build-fuzz, run nothing
#   --no-build   run what build-fuzz holds (e.g. while another build has the machine)
#   -j N         run N targets at once (default: the number of cores)
# Environment: LMC_FUZZ_BUILD_DIR (default build-fuzz); LMC_BUILD_DIR, the normal
# build whose lmc and lmrt make the plan, shard, weights and checkpoint seeds
# (default build; without it those seeds are left out); LMC_FUZZ_TIMEOUT, the
# seconds one input may take before it counts as a hang (default 10).
#
# Each target starts from its seeds (regenerated into build-fuzz/fuzz/seeds), its
# regression inputs (test/Fuzz/regressions/TARGET) and the corpus earlier runs
# grew (build-fuzz/fuzz/corpus/TARGET). An input that fails is copied into
# test/Fuzz/regressions/TARGET, so that the fix is committed with it and ctest
# replays it from then on; the log is build-fuzz/fuzz/logs/TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
all_targets=(lexer parser json plan shard megatron safetensors hf_config checkpoint_meta)

build=1 run=1 jobs=$(nproc) seconds=30 targets=()
while (($#)); do
  case $1 in
    --build-only) run=0 ;;
    --no-build) build=0 ;;
    -j) jobs=$2; shift ;;
    -j*) jobs=${1#-j} ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    [0-9]*) seconds=$1 ;;
    *)
      [[ " ${all_targets[*]} " == *" $1 "* ]] || { echo "fuzz: unknown target '$1' (${all_targets[*]})" >&2; exit 2; }
      targets+=("$1") ;;
  esac
  shift
done
((${#targets[@]})) || targets=("${all_targets[@]}")

fbuild=${LMC_FUZZ_BUILD_DIR:-build-fuzz}
[[ $fbuild = /* ]] || fbuild=$root/$fbuild
nbuild=${LMC_BUILD_DIR:-build}
[[ $nbuild = /* ]] || nbuild=$root/$nbuild
work=$fbuild/fuzz

# --- build ----------------------------------------------------------------------
if ((build)); then
  scripts/setup.sh --fuzz
  if [[ ! -f $fbuild/build.ninja ]]; then
    # -O1 with line tables: symbolized stacks and a quicker build than -O3. Only the
    # fuzz targets and the libraries they link are built (lmc_fuzzers).
    cmake -G Ninja -S . -B "$fbuild" \
      -DLMC_FUZZ=ON \
      -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
      -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py
  fi
  cmake --build "$fbuild" --target lmc_fuzzers -- -j"$(nproc)"
fi
((run)) || exit 0

# --- seeds ----------------------------------------------------------------------
seeds=$work/seeds
rm -rf "$seeds" "$work/tmp"
for t in "${all_targets[@]}"; do mkdir -p "$seeds/$t" "$work/corpus/$t" "$work/artifacts/$t" "$work/tmp/$t"; done
mkdir -p "$work/logs"

gen=$work/tmp/gen  # files made with the normal build's tools
copy_seeds() {  # TARGET FILE...: each file under a name that keeps its origin
  local t=$1 f name; shift
  for f in "$@"; do
    name=${f#"$gen"/}
    name=${name#"$root"/}
    [[ -f $f ]] && cp "$f" "$seeds/$t/${name//\//_}"
  done
  return 0
}
# Sources: the model zoo, the frontend's tests and every .lm test input.
for t in lexer parser; do
  copy_seeds "$t" models/*.lm models/blocks/*.lm test/Frontend/*.lm test/*/Inputs/*.lm
done
# The targets that build valid files of their own plan write them as seeds.
for t in plan safetensors hf_config checkpoint_meta; do
  LMC_FUZZ_SEED_DIR=$seeds/$t TMPDIR=$work/tmp/$t "$fbuild/bin/lmc_fuzz_$t" -runs=0 >/dev/null 2>&1 ||
    { echo "fuzz: lmc_fuzz_$t could not write its seeds" >&2; exit 1; }
done
# Plans, shards, weights, a checkpoint and an HF export, made with the normal build's tools.
if [[ -x $nbuild/bin/lmc && -x $nbuild/bin/lmrt ]]; then
  make_seeds() {
    mkdir -p "$gen"
    lmc=$nbuild/bin/lmc lmrt=$nbuild/bin/lmrt
    small=(-D d=16 -D layers=1 -D heads=2 -D ctx=16 -D seq=8 -D batch=2)
    # --fusion none: no generated kernels, so plans stay a few KB; one fused plan
    # carries kernels and kernel libraries.
    "$lmc" compile models/gpt2.lm --preset tiny "${small[@]}" -o "$gen/gpt2-fused.plan"
    "$lmc" compile models/gpt2.lm --preset tiny "${small[@]}" --fusion none -o "$gen/gpt2.plan"
    for m in llama bert roberta albert electra spanbert deberta; do
      extra=()
      [[ $m == electra ]] && extra=(-D glayers=1)
      "$lmc" compile "models/$m.lm" --preset tiny -D layers=1 -D batch=2 -D seq=16 "${extra[@]}" --fusion none \
        -o "$gen/$m.plan"
    done
    copy_seeds plan "$gen"/*.plan
    "$lmrt" data build --input docs/architecture.md test/E2E/Inputs/four_docs.txt --out "$gen/data" \
      --val-fraction 0.3
    copy_seeds shard "$gen/data/train.bin" "$gen/data/val.bin"
    python3 test/Fuzz/pack_seeds.py shard "$gen/data/val.bin" "$seeds/shard"
    python3 test/Fuzz/pack_seeds.py megatron "$gen/data/val.bin" "$seeds/megatron"
    "$lmrt" run "$gen/gpt2.plan" --data "$gen/data" --steps 2 --eval-batches 1 --checkpoint-dir "$gen/ck" \
      --checkpoint-every 2 --out "$gen/w.safetensors"
    "$lmrt" weights export --format hf "$gen/gpt2.plan" "$gen/w.safetensors" --out "$gen/hf"
    copy_seeds safetensors "$gen/w.safetensors" "$gen/hf/model.safetensors" "$gen/ck/step-00000002/state.safetensors"
    copy_seeds checkpoint_meta "$gen/ck/step-00000002/meta.json"
    copy_seeds hf_config "$gen/hf/config.json"
    copy_seeds json "$gen/data/meta.json" "$gen/ck/step-00000002/meta.json" "$gen/hf/config.json"
  }
  # In the background, so that set -e stops it at the first failure (a function
  # called on the left of || would run on past one).
  make_seeds > "$work/logs/seeds.log" 2>&1 &
  wait $! || { cat "$work/logs/seeds.log"; echo "fuzz: making the seeds failed" >&2; exit 1; }
else
  echo "fuzz: no $nbuild/bin/lmc and lmrt (scripts/build.sh): plan, data and weights seeds left out"
fi
cp "$seeds"/checkpoint_meta/* "$seeds"/hf_config/* "$seeds/json/"
# safetensors headers are JSON too
for f in "$seeds"/safetensors/*; do
  python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(); n=struct.unpack_from("<Q",d)[0]; sys.stdout.buffer.write(d[8:8+n])' \
    "$f" > "$seeds/json/header-$(basename "$f").json"
done

# --- run ------------------------------------------------------------------------
dict_of() {
  case $1 in
    lexer|parser) echo "-dict=$root/test/Fuzz/lm.dict" ;;
    json|checkpoint_meta|hf_config|safetensors) echo "-dict=$root/test/Fuzz/json.dict" ;;
    plan) echo "-dict=$root/test/Fuzz/plan.dict" ;;
  esac
}

fuzz_one() {  # TARGET: runs it, keeps what it found; its status goes to logs/TARGET.status
  local t=$1 log=$work/logs/$1.log regress=$root/test/Fuzz/regressions/$1 status=0
  local inputs=("$work/corpus/$t" "$seeds/$t")
  [[ -d $regress ]] && inputs+=("$regress")
  rm -f "$work/artifacts/$t"/*
  # Each target's scratch files (FuzzSupport.h) live in build-fuzz, never elsewhere.
  # shellcheck disable=SC2046  # dict_of prints one word or none
  TMPDIR=$work/tmp/$t "$fbuild/bin/lmc_fuzz_$t" \
    -max_total_time="$seconds" -timeout="${LMC_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$t/" $(dict_of "$t") \
    "${inputs[@]}" > "$log" 2>&1 || status=$?
  rm -rf "${work:?}/tmp/$t"/*
  local found=("$work/artifacts/$t"/*)
  if [[ -e ${found[0]} ]]; then
    mkdir -p "$regress"
    cp "${found[@]}" "$regress/"
    ((status)) || status=1
  fi
  echo "$status" > "$work/logs/$t.status"
}

summary() {  # TARGET STATUS: one line from the log's final stats
  local t=$1 log=$work/logs/$1.log
  local execs cov result
  execs=$(sed -n 's/^stat::number_of_executed_units: //p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  result=ok
  if (($2)); then
    result="FAILED ($(grep -m1 -oE 'ERROR: [A-Za-z]+: [^ ]+( [^ ]+)?|ALARM: .*|out-of-memory.*|Deadly signal' "$log" || echo "exit $2"))"
  fi
  printf '%-16s %12s execs  %-22s %s\n' "$t" "${execs:-?}" "${cov:-cov: ?}" "$result"
}

echo "fuzz: ${targets[*]} for ${seconds}s each, $jobs at a time (logs: $work/logs)"
declare -A status_of
running=0
for t in "${targets[@]}"; do
  rm -f "$work/logs/$t.status"
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
failed=0
for t in "${targets[@]}"; do
  status_of[$t]=$(cat "$work/logs/$t.status" 2>/dev/null || echo 1)
  ((status_of[$t])) && failed=1
done
for t in "${targets[@]}"; do summary "$t" "${status_of[$t]}"; done
if ((failed)); then
  for t in "${targets[@]}"; do
    ((status_of[$t])) || continue
    echo "--- $t: the end of $work/logs/$t.log; its input is now in test/Fuzz/regressions/$t"
    tail -40 "$work/logs/$t.log"
  done
  exit 1
fi

#!/usr/bin/env bash
# The GPU check (docs/gpu-check.md): unpacks a GPU bundle (scripts/gpu-bundle.sh) and runs,
# within a time budget, everything there is to run on a GPU machine, continuing past
# failures so that one run reports everything:
#   1. the machine: nvidia-smi, the driver, the CUDA 13 libraries, Python and torch;
#      LD_LIBRARY_PATH is then the bundle's lib/ and the folder of libcublasLt.so.13 only
#      (plus lib/compat when the machine's libstdc++ is too old, and the driver's folder
#      when the dynamic loader does not already know it);
#   2. ldd of every bundled binary and library; lmrt --help; lmrt devices; a 5-step CPU
#      run and a 5-step GPU run of a tiny plan, in fp32, bf16 and fp16;
#   3. the gpu-labelled tests: lmrt_cuda_gpu_test (every op's CUDA kernel against the
#      CPU's, NCCL over one rank), lmrt_cuda_table_test, and the lit tests of test/GPU
#      (without a GPU: their dry run, the CPU standing in for the GPU, and the GPU parts
#      reported as skipped);
#   4. NCCL in training: 10 steps of a tiny GPT whose parameters and loss pass through
#      collectives of one rank, sent through NCCL (LMRT_NCCL_GROUPS_OF_ONE=1): the same
#      weights as the run that copies them, the plain plan's loss; with the all-reduces
#      on a second stream (LMRT_CUDA_COLLECTIVE_STREAM=1) the same weights again; and with
#      collectives on the tensor axis too (one NCCL communicator per mesh axis);
#   5. the GPU benchmark: GPT-2 124M at batch 8 x seq 1024, lmrt in f32, TF32 and bf16 beside
#      PyTorch eager and torch.compile in TF32 and bf16 on the same GPU (bench/roofline.py:
#      tokens/s, TFLOP/s, MFU against 989 TFLOP/s dense bf16), then lmrt --profile's kernel table;
#   6. a summary: every item PASS, FAIL or SKIP, and the totals.
# Writes LOGDIR/gpu-check.log (everything printed), summary.txt, bench.jsonl and
# artifacts.tar.xz (benchmark logs, failed tests' outputs). Exit code 1 if anything failed.
# Usage: scripts/gpu-check.sh BUNDLE.tar.xz [LOGDIR]   (LOGDIR default: $OUT, else ./gpu-check-out)
# Environment: GPU_CHECK_BUDGET_S (default 480: the whole run, unpacking included),
#   GPU_CHECK_WORK (where to unpack; default a new folder under $TMPDIR or /tmp).
set -uo pipefail  # not -e: a failure is reported and the check goes on

t0=$SECONDS
budget=${GPU_CHECK_BUDGET_S:-480}
[[ $# -ge 1 && -f $1 ]] || { echo "usage: $0 BUNDLE.tar.xz [LOGDIR] (no bundle at '${1:-}')" >&2; exit 2; }
bundle=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
logdir=${2:-${OUT:-gpu-check-out}}
mkdir -p "$logdir" && logdir=$(cd "$logdir" && pwd)
log=$logdir/gpu-check.log
exec > >(tee "$log") 2>&1
tee_pid=$!

# The loader's cache (ldconfig lives in /sbin, which env -i's PATH may lack).
ldcache() { { command -v ldconfig > /dev/null && ldconfig -p || /sbin/ldconfig -p || /usr/sbin/ldconfig -p; } 2> /dev/null; }
left() { echo $((budget - (SECONDS - t0))); }
section() { printf '\n==== %s  [t=%ds, %ds left]\n' "$*" $((SECONDS - t0)) "$(left)"; }
results=()
n_pass=0 n_fail=0 n_skip=0
record() {  # record PASS|FAIL|SKIP NAME [DETAIL] [COUNT]: COUNT items (default 1)
  local count=${4:-1}
  results+=("$(printf '%-4s  %s%s' "$1" "$2" "${3:+: $3}")")
  case $1 in PASS) n_pass=$((n_pass + count)) ;; FAIL) n_fail=$((n_fail + count)) ;; *) n_skip=$((n_skip + count)) ;; esac
  printf '>>> %s %s%s\n' "$1" "$2" "${3:+: $3}"
}
summary() {
  {
    section "summary"
    echo "bundle $(basename "$bundle"); GPU: ${gpu_name:-none}; $((SECONDS - t0)) s of ${budget}"
    ((have_gpu)) && [[ -s $W/bench-table.txt ]] && grep -v '^RESULT' "$W/bench-table.txt"
    printf '%s\n' "${results[@]}"
    echo "totals: $n_pass passed, $n_fail failed, $n_skip skipped"
  } | tee "$logdir/summary.txt"
}
have_gpu=0 W=
limit() {  # limit CAP RESERVE: seconds for a phase (at most CAP, leaving RESERVE for the rest; >= 10)
  local l=$(($(left) - $2)); ((l > $1)) && l=$1; ((l < 10)) && l=10; echo "$l"
}

section "LMC GPU check: $bundle"
date -u '+%Y-%m-%d %H:%M:%S UTC'
echo "host $(cat /proc/sys/kernel/hostname), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) memory; $(uname -srm)"
grep -m1 'model name' /proc/cpuinfo | sed 's/^.*: /cpu: /'
echo "glibc: $(ldd --version 2>&1 | head -1)"
echo "budget ${budget}s; logs in $logdir"

# --- unpack ---------------------------------------------------------------------------
work=${GPU_CHECK_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/lmc-gpu-check.XXXXXX")}
mkdir -p "$work" && rm -rf "$work/lmc-gpu-bundle"
if command -v xz > /dev/null; then
  tar -C "$work" -xJf "$bundle"
else  # Python's tarfile reads xz by itself
  python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1])
t.extractall(sys.argv[2], **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))' "$bundle" "$work"
fi
B=$work/lmc-gpu-bundle
if [[ ! -x $B/bin/lmrt ]]; then
  record FAIL "unpack" "$bundle did not unpack to lmc-gpu-bundle/bin/lmrt"
  summary; exit 1
else
  echo "unpacked to $B ($(du -sh "$B" | cut -f1))"
  python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))
print("bundle: commit %s%s (%s), made %s on %s" % (m["commit"][:12], " + local changes" if m["dirty"] else "", m["branch"], m["made"], m["host"]))
print("not bundled:", m["not_bundled"])' "$B/MANIFEST.json" 2>/dev/null || echo "bundle: no readable MANIFEST.json"
fi

# --- the machine: GPU, driver, CUDA libraries, Python ----------------------------------
section "GPU and driver"
if command -v nvidia-smi > /dev/null; then
  timeout 30 nvidia-smi
  timeout 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap,clocks.max.sm,power.limit --format=csv
else
  echo "nvidia-smi: not found"
fi
[[ -r /proc/driver/nvidia/version ]] && head -1 /proc/driver/nvidia/version
orig_ld=${LD_LIBRARY_PATH:-}
echo "LD_LIBRARY_PATH on arrival: ${orig_ld:-(empty)}"
driver_dir=
if ldcache | grep -q 'libcuda\.so\.1 '; then
  echo "libcuda.so.1 (driver): $(ldcache | awk '/libcuda\.so\.1 / {print $NF; exit}' | xargs readlink -f)"
else
  # Not in the loader's cache: look where container images put it (never CUDA's compat/ copy).
  for d in ${orig_ld//:/ } /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/wsl/lib /usr/lib64; do
    if [[ -e $d/libcuda.so.1 && $d != */compat ]]; then driver_dir=$d; break; fi
  done
  echo "libcuda.so.1 (driver): ${driver_dir:+$driver_dir/libcuda.so.1 (added to LD_LIBRARY_PATH)}${driver_dir:-not found: no NVIDIA driver here}"
fi

section "Python and torch"
py='' have_torch=0
for cand in python3 python3.12 python /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python; do
  command -v "$cand" > /dev/null || continue
  if "$cand" -c 'import torch, numpy' 2> /dev/null; then py=$(command -v "$cand") have_torch=1; break; fi
  [[ -z $py ]] && fallback_py=$(command -v "$cand")
done
if [[ -n $py ]]; then
  "$py" -c 'import sys, torch, numpy
cuda = torch.cuda.is_available()
print("python %s (%s): torch %s (CUDA %s, cuDNN %s), numpy %s; torch sees %s" % (sys.version.split()[0], sys.executable,
      torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), numpy.__version__,
      torch.cuda.get_device_name(0) if cuda else "no GPU"))'
else
  py=${fallback_py:-python3}
  echo "no Python here imports torch and numpy: the PyTorch parts are skipped (the tests' helpers use $py)"
fi
command -v nvcc > /dev/null && echo "nvcc: $(nvcc --version | tail -2 | head -1)"

section "CUDA 13 libraries"
cublas_dirs=()
c=$(ldcache | awk '/libcublasLt\.so\.13 / {print $NF; exit}')
[[ -n $c ]] && cublas_dirs+=("$(dirname "$c")")
for d in /usr/local/cuda*/lib64 /usr/local/cuda*/lib /usr/local/cuda*/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
  [[ -e $d/libcublasLt.so.13 ]] && cublas_dirs+=("$d")
done
# The pip wheels torch uses (nvidia-cublas for CUDA 13: site-packages/nvidia/.../lib).
while read -r sp; do
  [[ -d $sp/nvidia ]] || continue
  while read -r f; do cublas_dirs+=("$(dirname "$f")"); done < <(find "$sp/nvidia" -name 'libcublasLt.so.13' 2> /dev/null)
done < <(env LD_LIBRARY_PATH="$orig_ld" "$py" -c 'import site
print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2> /dev/null)
cublas_dir=
declare -A seen=()
for d in "${cublas_dirs[@]}"; do
  real=$(readlink -f "$d/libcublasLt.so.13")
  [[ -n ${seen[$real]:-} ]] && continue
  seen[$real]=1
  version=$(env LD_LIBRARY_PATH="$orig_ld" "$py" -c 'import ctypes, sys
print(ctypes.CDLL(sys.argv[1]).cublasLtGetVersion())' "$real" 2> /dev/null)
  echo "libcublasLt.so.13: $real (cublasLtGetVersion ${version:-?})"
  [[ -z $cublas_dir ]] && cublas_dir=$d
done
[[ -n $cublas_dir ]] || echo "libcublasLt.so.13: not found (looked in the loader's cache, /usr/local/cuda*, pip's nvidia wheels)"

# NCCL: lmrt's CUDA plugin opens libnccl.so.2 (dlopen) when a run first needs it; it is too
# big for the bundle (200 MB), and torch's wheels bring one (nvidia-nccl).
nccl_dir=
if ! ldcache | grep -q 'libnccl\.so\.2 '; then
  for d in /usr/local/cuda*/lib64 /usr/local/cuda*/lib /usr/local/cuda*/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
    [[ -e $d/libnccl.so.2 ]] && nccl_dir=$d && break
  done
  if [[ -z $nccl_dir ]]; then
    while read -r sp; do
      f=$(find "$sp/nvidia" -name 'libnccl.so.2' 2> /dev/null | head -1)
      [[ -n $f ]] && nccl_dir=$(dirname "$f") && break
    done < <(env LD_LIBRARY_PATH="$orig_ld" "$py" -c 'import site
print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2> /dev/null)
  fi
  echo "libnccl.so.2: ${nccl_dir:+$(readlink -f "$nccl_dir/libnccl.so.2")}${nccl_dir:-not found (the NCCL tests will fail)}"
else
  echo "libnccl.so.2: $(ldcache | awk '/libnccl\.so\.2 / {print $NF; exit}' | xargs readlink -f) (the loader's cache)"
fi

# The run's environment: the bundle's libraries and the CUDA 13 folder, nothing inherited.
export LD_LIBRARY_PATH=$B/lib${cublas_dir:+:$cublas_dir}${nccl_dir:+:$nccl_dir}${driver_dir:+:$driver_dir}
if ldd "$B/bin/lmrt" "$B/lib/liblmrt_cuda.so" 2>&1 |
   grep -qE "(GLIBCXX|CXXABI|GCC)_[0-9.]+' not found|libstdc\+\+\.so\.6 => not found|libgcc_s\.so\.1 => not found"; then
  echo "this machine's libstdc++ is older than the build's: using the bundle's (lib/compat)"
  LD_LIBRARY_PATH=$B/lib:$B/lib/compat${cublas_dir:+:$cublas_dir}${nccl_dir:+:$nccl_dir}${driver_dir:+:$driver_dir}
fi
echo "LD_LIBRARY_PATH for the run: $LD_LIBRARY_PATH"
printf 'LMC_PYTHON=%q\nLMC_PYTHON_LD_LIBRARY_PATH=%q\n' "$py" "$orig_ld" > "$B/bin/python.conf"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}  # lit runs 4 tests at a time
W=$work/run
mkdir -p "$W"

# --- the bundle's binaries ------------------------------------------------------------
section "ldd of every bundled binary and library"
missing=
for f in "$B"/bin/* "$B"/lib/*.so*; do
  [[ $(head -c 4 "$f" 2> /dev/null) == $'\x7fELF' ]] || continue
  out=$(ldd "$f" 2>&1)
  nf=$(grep -E 'not found' <<< "$out")
  [[ -n $nf ]] && missing+="${f#"$B"/}: $(tr -s ' \t\n' ' ' <<< "$nf")"$'\n'
done
ldd "$B/bin/lmrt" "$B/lib/liblmrt_cuda.so" | grep -E 'libcublasLt|libstdc\+\+|libgomp|libdnnl|libopenblas' | sort -u
if [[ -z $missing ]]; then
  record PASS "ldd: every bundled binary and library finds its libraries"
else
  printf '%s' "$missing"
  record FAIL "ldd: libraries not found" "$(printf '%s' "$missing" | head -3 | tr '\n' ';')"
fi

section "lmrt smoke runs"
if "$B/bin/lmrt" --help > "$W/help.txt" 2>&1; then
  record PASS "lmrt --help" "$(head -1 "$W/help.txt")"
else
  cat "$W/help.txt"; record FAIL "lmrt --help"
fi
"$B/bin/lmrt" devices > "$W/devices.txt" 2>&1
devices_rc=$?
cat "$W/devices.txt"
have_gpu=0; ((devices_rc == 0)) && have_gpu=1
gpu_name=$(head -1 "$W/devices.txt")
if ((have_gpu)); then record PASS "lmrt devices" "$gpu_name"; else record SKIP "lmrt devices" "no GPU: $gpu_name"; fi
# The fp32 plan, then the same tiny GPT in bf16 and in fp16 (cuBLASLt's 16-bit GEMMs,
# the kernels' bf16 / f16 stores, fp16's loss scaler): each on the CPU, then the GPU.
for smoke_case in "smoke:a tiny GPT" "smoke-bf16:a tiny GPT in bf16" "smoke-fp16:a tiny GPT in fp16"; do
  name=${smoke_case%%:*} what=${smoke_case#*:}
  smoke=(run "$B/plans/$name.plan" --data "$B/data/fortunes" --steps 5 --eval-batches 0 --overwrite)
  if timeout 120 "$B/bin/lmrt" "${smoke[@]}" --out "$W/$name-cpu.safetensors" > "$W/$name-cpu.txt" 2>&1; then
    record PASS "lmrt run (CPU, 5 steps of $what)" "$(grep 'step 5/5' "$W/$name-cpu.txt" | cut -d'|' -f2 | xargs)"
  else
    cat "$W/$name-cpu.txt"; record FAIL "lmrt run (CPU, 5 steps of $what)"
  fi
  if ((have_gpu)); then
    if timeout 120 "$B/bin/lmrt" "${smoke[@]}" --device cuda --out "$W/$name-gpu.safetensors" > "$W/$name-gpu.txt" 2>&1; then
      cat "$W/$name-gpu.txt"
      record PASS "lmrt run --device cuda (5 steps of $what)" "$(grep 'step 5/5' "$W/$name-gpu.txt" | cut -d'|' -f2 | xargs)"
    else
      cat "$W/$name-gpu.txt"
      echo "--- again with LMRT_CUDA_SYNC=1 (a wait after every plan step names the step that faults):"
      LMRT_CUDA_SYNC=1 timeout 120 "$B/bin/lmrt" "${smoke[@]}" --device cuda --out "$W/$name-gpu.safetensors" 2>&1 | tail -5
      record FAIL "lmrt run --device cuda (5 steps of $what)" "$(grep -m1 'error' "$W/$name-gpu.txt")"
    fi
  else
    record SKIP "lmrt run --device cuda (5 steps of $what)" "no GPU"
  fi
done

# --- the gpu-labelled tests: GoogleTest ---------------------------------------------------
for t in lmrt_cuda_table_test lmrt_cuda_gpu_test; do
  section "$t"
  lim=$(limit 150 240)
  timeout -k 10 "$lim" "$B/bin/$t" --gtest_color=no > "$W/$t.out" 2>&1
  rc=$?
  grep -vE '^\[ RUN      \]|^\[       OK \]' "$W/$t.out" | tail -60
  runs=$(grep -c '^\[ RUN      \]' "$W/$t.out")
  ok=$(grep -c '^\[       OK \]' "$W/$t.out")
  skipped=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$W/$t.out")
  failed=$((runs - ok - skipped))  # failed, or cut short by a crash or the timeout
  failed_names=$(grep -E '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$W/$t.out" | sed 's/^\[  FAILED  \] //; s/ (.*//' | head -5 | xargs)
  ((rc == 124)) && failed_names+=" (timed out after ${lim}s)"
  ((rc != 0 && failed == 0)) && failed=1 && failed_names+=" (exit code $rc)"
  echo "$t: $runs cases: $ok passed, $failed failed, $skipped skipped (exit code $rc)"
  ((ok)) && record PASS "$t" "$ok cases" "$ok"
  ((failed)) && record FAIL "$t" "$failed cases: $failed_names" "$failed"
  if ((skipped)); then
    ((have_gpu)) && why="skipped" || why="no GPU: the CPU half of each case ran, its GPU half skipped"
    record SKIP "$t" "$skipped cases ($why)" "$skipped"
  fi
done

# --- NCCL in training: collectives of one rank through NCCL ------------------------------
# plans/smoke-collectives.plan is smoke.plan's model with every parameter and the loss passed
# through a collective of one rank (test/GPU/Inputs/group_of_one.py): with one rank the
# identity, so it trains to smoke.plan's losses; LMRT_NCCL_GROUPS_OF_ONE=1 sends those
# collectives through NCCL instead of copying them (NCCL_DEBUG=VERSION: NCCL says its version).
section "NCCL: 10 steps of a tiny GPT through collectives of one rank"
coll=(run "$B/plans/smoke-collectives.plan" --data "$B/data/fortunes" --steps 10 --eval-batches 0 --overwrite)
plain=(run "$B/plans/smoke.plan" --data "$B/data/fortunes" --steps 10 --eval-batches 0 --overwrite)
loss10() { grep 'step 10/10' "$1" | cut -d'|' -f2 | xargs; }
if ((have_gpu)); then dev=(--device cuda) where=GPU; else dev=() where=CPU; fi
timeout 120 "$B/bin/lmrt" "${plain[@]}" "${dev[@]}" --out "$W/plain-10.safetensors" > "$W/plain-10.txt" 2>&1
timeout 120 "$B/bin/lmrt" "${coll[@]}" "${dev[@]}" --out "$W/coll-copy.safetensors" > "$W/coll-copy.txt" 2>&1
cat "$W/coll-copy.txt"
if [[ -n $(loss10 "$W/coll-copy.txt") && $(loss10 "$W/coll-copy.txt") == "$(loss10 "$W/plain-10.txt")" ]]; then
  record PASS "lmrt run ($where, collectives of one rank copied)" "$(loss10 "$W/coll-copy.txt"), the plain plan's"
else
  cat "$W/plain-10.txt"
  record FAIL "lmrt run ($where, collectives of one rank copied)" "loss '$(loss10 "$W/coll-copy.txt")', plain plan '$(loss10 "$W/plain-10.txt")'"
fi
if ((have_gpu)); then
  LMRT_NCCL_GROUPS_OF_ONE=1 NCCL_DEBUG=VERSION timeout 120 "$B/bin/lmrt" "${coll[@]}" --device cuda \
    --out "$W/coll-nccl.safetensors" > "$W/coll-nccl.txt" 2>&1
  cat "$W/coll-nccl.txt"
  if ! grep -q '^collectives: NCCL' "$W/coll-nccl.txt"; then
    record FAIL "lmrt run --device cuda through NCCL (10 steps, 1 rank)" "NCCL never ran: $(grep -m1 'error' "$W/coll-nccl.txt")"
  elif [[ $(loss10 "$W/coll-nccl.txt") == "$(loss10 "$W/plain-10.txt")" ]] && cmp -s "$W/coll-nccl.safetensors" "$W/coll-copy.safetensors"; then
    record PASS "lmrt run --device cuda through NCCL (10 steps, 1 rank)" \
      "$(loss10 "$W/coll-nccl.txt"), the plain plan's; weights byte-identical to the copying run; $(grep -m1 '^collectives: ' "$W/coll-nccl.txt")"
  else
    record FAIL "lmrt run --device cuda through NCCL (10 steps, 1 rank)" \
      "loss '$(loss10 "$W/coll-nccl.txt")', plain '$(loss10 "$W/plain-10.txt")'; weights $(cmp -s "$W/coll-nccl.safetensors" "$W/coll-copy.safetensors" && echo same || echo differ)"
  fi
  # The same with lm.all_reduce on a second stream (LMRT_CUDA_COLLECTIVE_STREAM=1, opt-in until
  # this passes on a GPU: runtime/cuda/collective_stream.h): the same weights, byte for byte.
  LMRT_CUDA_COLLECTIVE_STREAM=1 LMRT_NCCL_GROUPS_OF_ONE=1 timeout 120 "$B/bin/lmrt" "${coll[@]}" --device cuda \
    --out "$W/coll-stream.safetensors" > "$W/coll-stream.txt" 2>&1
  if cmp -s "$W/coll-stream.safetensors" "$W/coll-nccl.safetensors"; then
    record PASS "lmrt run --device cuda, all_reduce on a second stream (LMRT_CUDA_COLLECTIVE_STREAM=1)" \
      "weights byte-identical to the one-stream NCCL run's"
  else
    cat "$W/coll-stream.txt"
    record FAIL "lmrt run --device cuda, all_reduce on a second stream (LMRT_CUDA_COLLECTIVE_STREAM=1)" \
      "weights differ from the one-stream NCCL run's: $(grep -m1 'error' "$W/coll-stream.txt")"
  fi
  # The tensor axis too (test/GPU/Inputs/group_of_one.py --tensor-axis): the matrices' gathers,
  # their gradients' reduce-scatters and the loss on mesh axis 1, the vectors on axis 0, and
  # lm.axis_index: lmrt joins one NCCL communicator per axis (runtime/cuda/collective.cpp), as a
  # tensor-parallel run does. The same losses and weights as the copying run of the same plan.
  tcoll=(run "$B/plans/smoke-collectives-tensor.plan" --data "$B/data/fortunes" --steps 10 --eval-batches 0 --overwrite)
  timeout 120 "$B/bin/lmrt" "${tcoll[@]}" --device cuda --out "$W/tcoll-copy.safetensors" > "$W/tcoll-copy.txt" 2>&1
  LMRT_NCCL_GROUPS_OF_ONE=1 timeout 120 "$B/bin/lmrt" "${tcoll[@]}" --device cuda \
    --out "$W/tcoll-nccl.safetensors" > "$W/tcoll-nccl.txt" 2>&1
  cat "$W/tcoll-nccl.txt"
  name="lmrt run --device cuda through NCCL on both mesh axes (10 steps, 1 rank, 2 communicators)"
  if [[ $(grep -c '^collectives: NCCL' "$W/tcoll-nccl.txt") != 2 ]]; then
    record FAIL "$name" "not one NCCL communicator per axis: $(grep -m1 'error' "$W/tcoll-nccl.txt")"
  elif [[ -n $(loss10 "$W/tcoll-nccl.txt") && $(loss10 "$W/tcoll-nccl.txt") == "$(loss10 "$W/plain-10.txt")" ]] &&
       cmp -s "$W/tcoll-nccl.safetensors" "$W/tcoll-copy.safetensors"; then
    record PASS "$name" "$(loss10 "$W/tcoll-nccl.txt"), the plain plan's; weights byte-identical to the copying run"
  else
    record FAIL "$name" "loss '$(loss10 "$W/tcoll-nccl.txt")', plain '$(loss10 "$W/plain-10.txt")'; weights $(cmp -s "$W/tcoll-nccl.safetensors" "$W/tcoll-copy.safetensors" && echo same || echo differ) (copying run: $(loss10 "$W/tcoll-copy.txt"))"
  fi
else
  record SKIP "lmrt run --device cuda through NCCL (10 steps, 1 rank)" "no GPU"
  record SKIP "lmrt run --device cuda through NCCL on both mesh axes (10 steps, 1 rank, 2 communicators)" "no GPU"
  record SKIP "lmrt run --device cuda, all_reduce on a second stream (LMRT_CUDA_COLLECTIVE_STREAM=1)" "no GPU"
fi

# --- the gpu-labelled tests: lit (test/GPU) -------------------------------------------------
if ((have_gpu)); then
  section "lit: test/GPU on the GPU"
  mode=()
else
  section "lit: test/GPU, dry run (no GPU: the CPU stands in for it)"
  mode=(--param gpu_on_cpu=1)
fi
lim=$(limit 300 150)
# Run with the machine's Python directly, so that lit hands the bundle's LD_LIBRARY_PATH to lmrt.
timeout -k 10 $((lim + 20)) "$py" "$B/lit/lit.py" -v -j4 --max-time "$lim" "${mode[@]}" \
  "$B/build/test/GPU" > "$W/lit.out" 2>&1
rc=$?
cat "$W/lit.out"
declare -A lit_n=([PASS]=0 [FAIL]=0 [SKIP]=0)
lit_failed=()
while read -r status name; do
  case $status in
    PASS | XFAIL) s=PASS ;;
    UNSUPPORTED | SKIPPED) s=SKIP ;;
    *) s=FAIL; lit_failed+=("$name") ;;
  esac
  lit_n[$s]=$((lit_n[$s] + 1))
done < <(sed -nE 's/^(PASS|FAIL|XFAIL|XPASS|UNSUPPORTED|UNRESOLVED|TIMEOUT|SKIPPED): LMC :: (GPU\/[^ ]+).*/\1 \2/p' "$W/lit.out")
((rc == 124 || rc == 137)) && lit_failed+=("(lit timed out after ${lim}s)") && lit_n[FAIL]=$((lit_n[FAIL] + 1))
((rc != 0 && lit_n[FAIL] == 0)) && lit_failed+=("(lit exit code $rc)") && lit_n[FAIL]=1
if ((have_gpu)); then
  ((lit_n[PASS])) && record PASS "lit test/GPU" "${lit_n[PASS]} tests" "${lit_n[PASS]}"
  ((lit_n[SKIP])) && record SKIP "lit test/GPU" "${lit_n[SKIP]} unsupported (torch missing?)" "${lit_n[SKIP]}"
else
  # Without a GPU the tests ran with the CPU standing in: a pass checks their plumbing, not the GPU.
  gpu_tests=$((lit_n[PASS] + lit_n[SKIP]))
  ((gpu_tests)) && record SKIP "lit test/GPU" "no GPU ($gpu_tests tests; their dry run on the CPU passed ${lit_n[PASS]})" "$gpu_tests"
fi
((lit_n[FAIL])) && record FAIL "lit test/GPU" "${lit_n[FAIL]}: ${lit_failed[*]}" "${lit_n[FAIL]}"

# --- the benchmark ----------------------------------------------------------------------
section "benchmark: GPT-2 124M, batch 8 x seq 1024"
: > "$logdir/bench.jsonl"
if ((have_gpu)); then
  torch_modes=eager,compile
  ((have_torch)) || torch_modes=
  lim=$(limit 100000 25)
  timeout -k 10 $((lim + 10)) "$py" "$B/src/bench/roofline.py" --device cuda --build "$B" --data "$B/data/fortunes" \
    --workdir "$W/bench" --precisions f32,tf32,bf16,bf16-tc --torch-precisions tf32,bf16 --torch-modes "$torch_modes" \
    --steps 8 --warmup 1 \
    --python "$B/bin/python" --time-budget "$lim" --run-timeout 120 --keep-going | tee "$logdir/bench.jsonl"
  "$py" - "$logdir/bench.jsonl" <<'EOF' > "$W/bench-table.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("%-22s %-7s %10s %10s %9s %7s" % ("impl", "prec", "step (s)", "tokens/s", "TFLOP/s", "MFU"))
for r in rows:
    if "step_time_s" in r:
        print("%-22s %-7s %10.4f %10.0f %9.2f %6.1f%%" % (r["impl"], r["precision"], r["step_time_s"],
              r["tokens_per_s"], r["achieved_tflops"], 100 * r["mfu"]))
        print("RESULT PASS %s %s: %.0f tokens/s, %.2f TFLOP/s, MFU %.1f%%" % (r["impl"], r["precision"],
              r["tokens_per_s"], r["achieved_tflops"], 100 * r["mfu"]))
    else:
        print("%-22s %-7s %s" % (r["impl"], r["precision"], r.get("error") or r.get("skipped")))
        print("RESULT %s %s %s: %s" % ("FAIL" if "error" in r else "SKIP", r["impl"], r["precision"],
              (r.get("error") or r.get("skipped"))[:200]))
EOF
  grep -v '^RESULT' "$W/bench-table.txt"
  while read -r _ status rest; do
    record "$status" "benchmark ${rest%%:*}" "${rest#*: }"
  done < <(grep '^RESULT' "$W/bench-table.txt")
  [[ -s $logdir/bench.jsonl ]] || record FAIL "benchmark" "no results (roofline.py failed: see the log)"
  ((have_torch)) || record SKIP "benchmark PyTorch" "no Python with torch here"

  # TF32, then the bf16 plan with attention on 16-bit tensor cores (opt-in until measured: attention.cu).
  for prof in tf32 bf16-tc; do
    section "lmrt --profile (GPT-2 124M, $prof, 4 steps)"
    plan=$W/bench/gpt2_b8t1024.cuda.plan prof_env=() prof_flags=(--tf32)
    [[ $prof == bf16-tc ]] && plan=$W/bench/gpt2_b8t1024.cuda-bf16.plan prof_env=(LMRT_CUDA_ATTENTION=tensor-cores) prof_flags=()
    if [[ -f $plan ]] && (($(left) > 45)); then
      if env "${prof_env[@]}" timeout -k 5 $(($(left) - 15)) "$B/bin/lmrt" run "$plan" --device cuda "${prof_flags[@]}" \
          --data "$B/data/fortunes" --steps 4 --eval-batches 0 --profile --overwrite --out "$W/profile-$prof.safetensors" \
          > "$W/profile-$prof.txt" 2>&1; then
        record PASS "lmrt --profile --device cuda ($prof)" "$(grep -m1 '^profile:' "$W/profile-$prof.txt")"
      else
        record FAIL "lmrt --profile --device cuda ($prof)" "$(grep -m1 'error' "$W/profile-$prof.txt")"
      fi
      cat "$W/profile-$prof.txt"
    else
      record SKIP "lmrt --profile --device cuda ($prof)" "no plan or no time left"
    fi
  done
else
  record SKIP "benchmark" "no GPU"
fi

# --- artifacts and summary -------------------------------------------------------------
section "artifacts"
arts=$W/artifacts
mkdir -p "$arts"
cp "$W"/*.out "$W"/*.txt "$arts/" 2> /dev/null
[[ -d $W/bench ]] && mkdir -p "$arts/bench" && cp "$W"/bench/*.log "$W"/bench/*.jsonl "$arts/bench/" 2> /dev/null
for name in "${lit_failed[@]}"; do  # GPU/x.test -> build/test/runs/<lit's pid>/GPU/Output/x.test.tmp
  t=${name%% *}
  for d in "$B"/build/test/runs/*/"$(dirname "$t")"/Output/"$(basename "$t")".tmp; do
    [[ -d $d ]] && mkdir -p "$arts/lit" && cp -r "$d" "$arts/lit/"
  done
done
# Plans and shards are in the bundle already; the rest is logs, metrics and tiny weights.
tar -C "$W" --exclude='*.plan' --exclude='*.bin' -cJf "$logdir/artifacts.tar.xz" artifacts
if (($(stat -c %s "$logdir/artifacts.tar.xz") > 15000000)); then
  tar -C "$W" --exclude='*.plan' --exclude='*.bin' --exclude='*.safetensors' -cJf "$logdir/artifacts.tar.xz" artifacts
fi
echo "$logdir/artifacts.tar.xz: $(stat -c %s "$logdir/artifacts.tar.xz") bytes"

summary
exec >&- 2>&-
wait "$tee_pid" 2> /dev/null
((n_fail == 0))

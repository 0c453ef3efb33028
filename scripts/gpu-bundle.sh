#!/usr/bin/env bash
# Packs the GPU bundle: one .tar.xz with everything the GPU check (scripts/gpu-check.sh,
# docs/gpu-check.md) needs on a GPU machine that has a driver, the CUDA 13 libraries and
# Python with torch, but none of our Debian packages and no MLIR:
#   bin/      lmrt, lmrt_cuda_gpu_test, lmrt_cuda_table_test; lmc, which replays the plans
#             recorded here (test/GPU/Inputs/lmc_replay.py); python, the machine's Python
#   lib/      lmrt's CUDA plugin and every library the binaries need that is neither glibc
#             nor the driver nor CUDA 13 (oneDNN, OpenBLAS, gfortran, protobuf, ...);
#             lib/compat: libstdc++ and libgcc_s, for a machine whose own are older
#   tools/    FileCheck and not stand-ins (test/GPU/Inputs; LLVM's need libLLVM and libz3)
#   lit/      LLVM 19's lit (pure Python)
#   src/      the GPU tests and their helpers, lit.cfg.py, models/, the benchmark scripts
#   build/test/lit.site.cfg.py   a relocatable site config for them
#   plans/    every plan the GPU tests and the benchmark compile, recorded by a dry run of
#             the GPU tests here (the CPU standing in for the GPU: test/GPU/lit.local.cfg)
#   data/fortunes/   the benchmark's shards; fortunes/: the text the tests build theirs from
#   MANIFEST.json    the commit, the files, where each library came from, the plans' commands
# Usage: scripts/gpu-bundle.sh [OUT]   (default .gpu/lmc-gpu-bundle.tar.xz, ignored by git)
#   --no-build   use ./build as it is (default: run scripts/build.sh first; with
#                LMC_BUILD_LOCK=/tmp/lmc-build.lock set, under that lock)
# About 3 minutes on 2 cores after the build (the dry run, then xz).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${LMC_BUILD_DIR:-build}
build=$(cd "$build" 2>/dev/null && pwd || echo "$root/$build")
out=.gpu/lmc-gpu-bundle.tar.xz
do_build=1
for arg in "$@"; do
  case $arg in
    --no-build) do_build=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-bundle: unknown option $arg" >&2; exit 2 ;;
    *) out=$arg ;;
  esac
done
max_bytes=$((40 * 1000 * 1000))
say() { echo "gpu-bundle: $*"; }
die() { echo "gpu-bundle: error: $*" >&2; exit 1; }

if ((do_build)); then
  if [[ -n ${LMC_BUILD_LOCK:-} ]]; then flock "$LMC_BUILD_LOCK" scripts/build.sh; else scripts/build.sh; fi
fi
for f in bin/lmrt bin/lmc lib/liblmrt_cuda.so bin/lmrt_cuda_gpu_test bin/lmrt_cuda_table_test; do
  [[ -x $build/$f || -f $build/$f ]] || die "$build/$f is missing: build with the CUDA toolkit (scripts/build.sh)"
done
python=$(sed -n 's/^config.python = "\(.*\)"$/\1/p' "$build/test/lit.site.cfg.py")
[[ -x $python ]] || die "no Python from $build/test/lit.site.cfg.py"
lit_src=/usr/lib/llvm-19/build/utils/lit
[[ -f $lit_src/lit.py ]] || die "no lit at $lit_src (llvm-19-tools)"

stage_parent=$build/gpu-bundle
stage=$stage_parent/lmc-gpu-bundle
rm -rf "$stage_parent"
mkdir -p "$stage"/{bin,lib/compat,tools,plans,data,fortunes,src/test,build/test}
say "staging in $stage"

# --- binaries and the libraries they need -----------------------------------------
cp "$build/bin/lmrt" "$build/bin/lmrt_cuda_gpu_test" "$build/bin/lmrt_cuda_table_test" "$stage/bin/"
cp "$build/lib/liblmrt_cuda.so" "$stage/lib/"
elves=("$stage/bin/lmrt" "$stage/bin/lmrt_cuda_gpu_test" "$stage/bin/lmrt_cuda_table_test" "$stage/lib/liblmrt_cuda.so")
# Not bundled: glibc (every machine has its own, and ours needs no newer than 2.34), the
# driver (libcuda, loaded by the CUDA runtime) and the CUDA 13 libraries, which the GPU
# machine has (gpu-check.sh finds libcublasLt.so.13 there).
system_re='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so)'
cuda_re='^(libcuda\.so|libcublas|libcublasLt|libcudart|libnvidia)'
libs_json=$stage_parent/libs.txt
: > "$libs_json"
while read -r soname path; do
  [[ $soname =~ $system_re || $soname =~ $cuda_re ]] && continue
  [[ $path == "not" || -z $path ]] && die "ldd cannot find $soname for the bundle's binaries"
  dest=$stage/lib
  [[ $soname =~ ^(libstdc\+\+|libgcc_s)\. ]] && dest=$stage/lib/compat
  cp -L "$path" "$dest/$soname"
  echo "$soname $(readlink -f "$path")" >> "$libs_json"
done < <(for e in "${elves[@]}"; do LD_LIBRARY_PATH=$stage/lib ldd "$e"; done | awk '/=>/ {print $1, $3}' | sort -u)

# --- lit, the stand-ins, the wrappers -----------------------------------------------
mkdir -p "$stage/lit"
cp "$lit_src/lit.py" "$stage/lit/"
cp -r "$lit_src/lit" "$stage/lit/"
find "$stage/lit" -name __pycache__ -prune -exec rm -rf {} +
cat > "$stage/bin/python" <<'EOF'
#!/bin/sh
# The Python of the GPU tests' helpers and of PyTorch: the machine's own (with torch), in
# the machine's own library environment rather than the bundle's (lib/ holds Debian's
# libgomp and libz; torch ships and expects its own). gpu-check.sh names the interpreter
# and the machine's LD_LIBRARY_PATH in python.conf beside this file.
LMC_PYTHON=python3
LMC_PYTHON_LD_LIBRARY_PATH=
conf="$(dirname "$0")/python.conf"
[ -f "$conf" ] && . "$conf"
if [ -n "$LMC_PYTHON_LD_LIBRARY_PATH" ]; then
  LD_LIBRARY_PATH=$LMC_PYTHON_LD_LIBRARY_PATH; export LD_LIBRARY_PATH
else
  unset LD_LIBRARY_PATH
fi
exec "$LMC_PYTHON" "$@"
EOF
# A Python tool of the bundle, run by bin/python.
py_tool() {  # py_tool DEST SCRIPT [VAR=VALUE] (SCRIPT relative to the bundle)
  printf '#!/bin/sh\nhere=$(dirname "$0")\n%bexec "$here/../bin/python" "$here/../%s" "$@"\n' \
    "${3:+export $3\n}" "$2" > "$1"
}
py_tool "$stage/bin/lmc" src/test/GPU/Inputs/lmc_replay.py 'LMC_PLAN_DIR="$here/../plans"'
py_tool "$stage/tools/FileCheck" src/test/GPU/Inputs/filecheck.py
cp test/GPU/Inputs/not.sh "$stage/tools/not"
chmod +x "$stage/bin/python" "$stage/bin/lmc" "$stage/tools/FileCheck" "$stage/tools/not"

# --- the tests, their helpers, the models, the benchmark ------------------------------
cp test/lit.cfg.py "$stage/src/test/"
mkdir -p "$stage/src/test/E2E" "$stage/src/test/Runtime" "$stage/src/bench"
cp -r test/GPU "$stage/src/test/"
cp -r test/E2E/Inputs "$stage/src/test/E2E/"
cp -r test/Runtime/Inputs "$stage/src/test/Runtime/"
cp -r models "$stage/src/"
cp bench/roofline.py bench/torch_train_gpt.py "$stage/src/bench/"
find "$stage/src" -name __pycache__ -prune -exec rm -rf {} +
cp scripts/gpu-check.sh "$stage/"
cat > "$stage/build/test/lit.site.cfg.py" <<'EOF'
# The GPU bundle's lit site config (scripts/gpu-bundle.sh): relocatable, every path is
# taken from where the bundle was unpacked. Run: lit/lit.py -sv build/test/GPU
import os

_bundle = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
config.llvm_tools_dir = os.path.join(_bundle, "tools")    # the FileCheck and not stand-ins
config.lmc_src_root = os.path.join(_bundle, "src")
config.lmc_obj_root = os.path.join(_bundle, "build")
config.lmc_tools_dir = os.path.join(_bundle, "bin")       # lmrt, and lmc replaying plans/
config.python = os.path.join(_bundle, "bin", "python")
config.mlir_include_dir = ""
config.fortunes_dir = os.path.join(_bundle, "fortunes")

import lit.llvm
lit.llvm.initialize(lit_config, config)
lit_config.load_config(config, os.path.join(config.lmc_src_root, "test", "lit.cfg.py"))
EOF

# --- data ---------------------------------------------------------------------------
fortunes=/usr/share/games/fortunes
[[ -d $fortunes ]] || die "no $fortunes (scripts/setup.sh installs fortunes)"
find "$fortunes" -maxdepth 1 -type f ! -name '*.dat' -exec cp {} "$stage/fortunes/" \;
"$build/bin/lmrt" data build --input "$fortunes" --out "$stage/data/fortunes" > /dev/null

# --- plans: a dry run of the GPU tests records theirs, the benchmark's are compiled ----
printf 'LMC_PYTHON=%q\n' "$python" > "$stage/bin/python.conf"
say "dry run of the GPU tests on the CPU (records their plans)"
dry_log=$stage_parent/dry-run.log
set +e
LMC_PLAN_RECORD=$stage/plans LMC_REAL_LMC=$build/bin/lmc \
  "$python" "$stage/lit/lit.py" -v --param gpu_on_cpu=1 "$stage/build/test/GPU" > "$dry_log" 2>&1
dry_rc=$?
set -e
grep -E '^(PASS|FAIL|XFAIL|XPASS|UNSUPPORTED|UNRESOLVED|TIMEOUT): ' "$dry_log" | sed 's/^/  /'
if ((dry_rc != 0)) || grep -qE '^(FAIL|UNSUPPORTED|UNRESOLVED|TIMEOUT|XPASS): ' "$dry_log"; then
  cat "$dry_log" >&2
  die "the dry run of the GPU tests did not pass every test (log above; an UNSUPPORTED one records no plans)"
fi
say "compiling the benchmark's plans"
LMC_PLAN_RECORD=$stage/plans LMC_REAL_LMC=$build/bin/lmc \
  "$python" "$stage/src/bench/roofline.py" --device cuda --build "$stage" --compile-only --precisions f32,tf32,bf16 \
  --workdir "$stage_parent/bench-plans" > /dev/null
# Plans of their own for gpu-check.sh's first smoke runs (CPU, then GPU): fp32, bf16, fp16;
# and the fp32 one's model with its parameters and loss through collectives of one rank
# (test/GPU/Inputs/group_of_one.py), for the 1-rank NCCL run; and with the matrices and the
# loss on the tensor axis (--tensor-axis), for the NCCL communicator of each mesh axis.
"$build/bin/lmc" compile models/gpt2.lm --preset tiny -D layers=2 -D batch=8 -D seq=64 --target cpu,cuda \
  --dump-dir "$stage_parent/smoke-ir" -o "$stage/plans/smoke.plan" > /dev/null
"$python" test/GPU/Inputs/group_of_one.py "$stage_parent/smoke-ir/00-frontend.mlir" \
  "$stage_parent/smoke-collectives.mlir" > /dev/null
"$build/bin/lmc" compile "$stage_parent/smoke-collectives.mlir" --target cpu,cuda \
  -o "$stage/plans/smoke-collectives.plan" > /dev/null
"$python" test/GPU/Inputs/group_of_one.py --tensor-axis "$stage_parent/smoke-ir/00-frontend.mlir" \
  "$stage_parent/smoke-collectives-tensor.mlir" > /dev/null
"$build/bin/lmc" compile "$stage_parent/smoke-collectives-tensor.mlir" --target cpu,cuda \
  -o "$stage/plans/smoke-collectives-tensor.plan" > /dev/null
for precision in bf16 fp16; do
  "$build/bin/lmc" compile models/gpt2.lm --preset tiny -D layers=2 -D batch=8 -D seq=64 --target cpu,cuda \
    --precision "$precision" -o "$stage/plans/smoke-$precision.plan" > /dev/null
done
rm -f "$stage/bin/python.conf"
rm -rf "$stage/build/test/GPU" "$stage/build/test/runs"   # the dry run's outputs (test/lit.cfg.py puts them under runs/)

# Every binary and library resolves inside the bundle, but for glibc and CUDA 13 (ldd here
# would also find the system's copies, so where each one resolves is what is checked).
outside=$(for e in "${elves[@]}" "$stage"/lib/*.so* "$stage"/lib/compat/*.so*; do
    env -i LD_LIBRARY_PATH="$stage/lib:$stage/lib/compat" ldd "$e" | awk -v e="${e#"$stage"/}" '/=>/ {print e, $1, $3}'
  done | while read -r e soname path; do
    [[ $soname =~ $system_re || $soname =~ $cuda_re || $path == "$stage"/* ]] || echo "  $e needs $soname ($path)"
  done)
[[ -z $outside ]] || die "libraries the bundle lacks:
$outside"

# --- manifest, README, pack -----------------------------------------------------------
"$python" - "$stage" "$libs_json" "$root" <<'EOF'
import json, os, subprocess, sys, time
stage, libs, root = sys.argv[1:4]
def git(*a):
    return subprocess.run(["git", "-C", root, *a], stdout=subprocess.PIPE, text=True).stdout.strip()
files = {}
for d, _, names in os.walk(stage):
    for n in names:
        p = os.path.join(d, n)
        files[os.path.relpath(p, stage)] = os.path.getsize(p)
plans = {}
for n in sorted(os.listdir(os.path.join(stage, "plans"))):
    if n.endswith(".json"):
        e = json.load(open(os.path.join(stage, "plans", n)))
        plans[n[:-5]] = {"command": "lmc " + " ".join(e["args"]), "rc": e["rc"]}
manifest = {
    "what": "LMC GPU bundle (scripts/gpu-bundle.sh; run it with scripts/gpu-check.sh, docs/gpu-check.md)",
    "commit": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
    "dirty": git("status", "--porcelain", "--untracked-files=no") != "",
    "made": time.strftime("%Y-%m-%d %H:%M:%S %z"), "host": os.uname().nodename,
    "libraries": dict(l.split() for l in open(libs)),
    "not_bundled": "glibc (2.34 or newer needed), libcuda.so.1 (the driver), libcublasLt.so.13 (CUDA 13)",
    "plans": plans, "files": files,
}
json.dump(manifest, open(os.path.join(stage, "MANIFEST.json"), "w"), indent=1, sort_keys=True)
EOF
cat > "$stage/README" <<'EOF'
LMC GPU bundle, made by scripts/gpu-bundle.sh (MANIFEST.json: commit, files, libraries).
Run everything (GPU tests, benchmark) with:  bash gpu-check.sh <this bundle's .tar.xz> [LOGDIR]
(from the repository: scripts/gpu-check.sh; see docs/gpu-check.md). By hand, after
`bash gpu-check.sh` has written bin/python.conf:
  LD_LIBRARY_PATH=$PWD/lib:<folder of libcublasLt.so.13> bin/lmrt devices
  LD_LIBRARY_PATH=... python3 lit/lit.py -sv build/test/GPU
EOF

mkdir -p "$(dirname "$out")"
say "packing (xz)"
tar -C "$stage_parent" -cf - lmc-gpu-bundle | xz -6 -T2 > "$out.tmp"
mv "$out.tmp" "$out"
bytes=$(stat -c %s "$out")
plans=("$stage"/plans/*.plan)
say "wrote $out: $bytes bytes ($(du -sh "$stage" | cut -f1) unpacked, ${#plans[@]} plans)"
((bytes < max_bytes)) || die "$out is $bytes bytes, over the $max_bytes the device tool's carry allows for it"

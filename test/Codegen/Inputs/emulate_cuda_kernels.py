"""Runs a plan's generated CUDA kernels on the CPU emulation of CUDA against the
plan's CPU kernels (test/Codegen/kernels-cuda-emulated.test): reads the kernels
(name, schedule, rows, cols, arguments) from the plan's text (lmc --dump-dir's
04-plan.txt), writes one C++ translation unit that includes
test/Unit/cuda_emu/emulation.h, the dumped kernels.cu and cuda_emu_harness.h, with
a launch per kernel as runtime/cuda/generated.cpp does it (the column reductions'
32 x 8 blocks over (column groups, row chunks), then the combine), compiles it with
the flags of the plan's CPU library at this machine's width, and runs it against
the CPU library lmc built (the only .so in the test's kernel cache).

Usage: emulate_cuda_kernels.py DUMP_DIR KERNEL_CACHE_DIR EMU_INCLUDE_DIR HARNESS_DIR OUT_DIR
Prints the harness's summary line (and a FAIL line per mismatch); exits non-zero
on any failure."""
import glob
import os
import re
import subprocess
import sys

SCHEDULES = {"ELEMENTWISE": "Elementwise", "MATMUL_EPILOGUE": "MatmulEpilogue", "COLUMN_REDUCE": "ColumnReduce"}


def parse_kernels(plan_text):
    """The plan's top-level `kernels { ... }` blocks as dicts."""
    kernels = []
    for block in re.findall(r"^kernels \{\n(.*?)^\}", plan_text, re.M | re.S):
        k = {"schedule": "ELEMENTWISE", "product_arg": -1, "num_inputs": 0, "args": []}
        for dtype, shape in re.findall(r"^  args \{\n    dtype: (\w+)\n(?:    shape: \[([0-9, ]*)\]\n)?  \}", block, re.M):
            numel = 1
            for d in (shape or "").replace(" ", "").split(","):
                if d:
                    numel *= int(d)
            k["args"].append((dtype, numel))
        for key in ("name", "schedule", "rows", "cols", "num_inputs", "product_arg"):
            m = re.search(r"^  %s: \"?([\w]+)\"?$" % key, block, re.M)
            if m:
                k[key] = m.group(1) if key in ("name", "schedule") else int(m.group(1))
        kernels.append(k)
    return kernels


def launcher(i, k):
    n = len(k["args"])
    head = "static void launch_%d(void **p) {\n  lmc::Args<%d> a;\n  for (int i = 0; i < %d; ++i) a.p[i] = p[i];\n" % (i, n, n)
    if k["schedule"] == "COLUMN_REDUCE":
        # runtime/cuda/generated.cpp: rowChunks(rows) chunks, 32 x 8 threads a block.
        return head + (
            "  const int64_t rows = %d, cols = %d;\n"
            "  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(64, rows / 64));\n"
            "  const int64_t chunkRows = (rows + chunks - 1) / chunks;\n"
            "  std::vector<double> part((size_t)(chunks * %d * cols) + 1);\n"
            "  lmrt_emu::launch(%s, {(unsigned)((cols + 31) / 32), (unsigned)chunks, 1}, {32, 8, 1}, 0, a,\n"
            "                   (int64_t)0, cols, (void *)part.data(), chunkRows);\n"
            "  lmrt_emu::launch(%s_combine, {2, 1, 1}, {64, 1, 1}, 0, a, cols, (const void *)part.data(), chunks);\n"
            "}\n" % (k["rows"], k["cols"], n - k["num_inputs"], k["name"], k["name"]))
    # A grid-stride loop: fewer, smaller blocks than on a GPU exercise the stride.
    return head + (
        "  const int64_t end = (int64_t)%d * %d;\n"
        "  lmrt_emu::launch(%s, {(unsigned)std::min<int64_t>(8, (end + 63) / 64), 1, 1}, {64, 1, 1}, 0, a,\n"
        "                   (int64_t)0, end);\n}\n" % (k["rows"], k["cols"], k["name"]))


def main():
    dump, cache, emu_include, harness, out = sys.argv[1:6]
    with open(os.path.join(dump, "04-plan.txt")) as f:
        kernels = parse_kernels(f.read())
    if not kernels:
        print("the plan has no generated kernels")
        return 1
    libs = glob.glob(os.path.join(cache, "kernels", "*.so"))
    if len(libs) != 1:
        print("expected one CPU kernel library in %s, found %d" % (cache, len(libs)))
        return 1
    src = ['#include "emulation.h"', '#include "kernels.cu"', "#include <algorithm>", '#include "cuda_emu_harness.h"', ""]
    specs = []
    for i, k in enumerate(kernels):
        src.append(launcher(i, k))
        args = ", ".join("{emu_harness::%s, %d}" % (t, n) for t, n in k["args"])
        specs.append('  {"%s", emu_harness::%s, %d, %d, %d, %d, {%s}, launch_%d},' % (
            k["name"], SCHEDULES[k["schedule"]], k["rows"], k["cols"], k["num_inputs"], k["product_arg"], args, i))
    src += ["int main(int, char **argv) {", "  std::vector<emu_harness::KernelSpec> kernels = {"] + specs
    src += ["  };", "  return emu_harness::runAll(argv[1], kernels);", "}", ""]
    main_cpp = os.path.join(out, "emulated_kernels.cpp")
    with open(main_cpp, "w") as f:
        f.write("\n".join(src))
    exe = os.path.join(out, "emulated_kernels")
    # The CPU library's flags (codegen/KernelCompiler.cpp) at this machine's width,
    # which is the target clone lmrt picks here.
    cmd = [os.environ.get("CXX", "c++"), "-std=c++17", "-O3", "-march=native", "-fopenmp-simd", "-fno-math-errno",
           "-fno-trapping-math", "-w", "-pthread", "-I", emu_include, "-I", harness, "-I", dump, "-o", exe, main_cpp,
           "-ldl"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        print("FAILED: " + " ".join(cmd))
        print(proc.stdout[-4000:])
        return 1
    run = subprocess.run([exe, libs[0]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(run.stdout, end="")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())

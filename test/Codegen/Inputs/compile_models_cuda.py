"""Compiles every model in models/ for the CPU and CUDA with lmc, at its default
config and, when it has one, its `tiny` preset (the recipes of models/finetune/
and models/post/ at their tiny preset only: their full-size configs generate the
same trunk kernels as the zoo models); the tiny GPT, BERT and LLaMA again with
--precision bf16 and fp16 (-lm-mixed-precision's casts fused into the kernels,
bf16 / f16 loads and stores in the bodies themselves). Then nvcc compiles every
generated CUDA kernel.

Most plans share most of their kernels (a body and a wrapper are named by the
hash of their text: the BERT family's trunks, a model's train and decode
programs), and nvcc took most of this test's time compiling the same kernels
again for every plan, and g++ their CPU kernels, which other tests compile. So lmc
runs nvcc itself (the plan's own fatbin with lmc's flags, beside the CPU
library) only for the plans in OWN_FATBIN; the other plans are compiled for CUDA
alone with a stand-in compiler (their CUDA sources are dumped all the same), and the union of
every plan's distinct bodies and wrappers, checked to be the same text wherever
the same name stands, is compiled once (-O3, sm_80: the oldest of lmc's
targets; the OWN_FATBIN plans are compiled with all of lmc's flags) and every storage type (-DLMC_ALL_STORAGE_TYPES: the bf16 and f16
wrappers). Split in two translation units compiled side by side.

Usage: compile_models_cuda.py MODELS_DIR OUT_DIR NVCC
Prints one line per model and config ("gpt2: 57 kernels, nvcc ok", ...), a line
for the union, and "models: ok" when every step succeeded; exits 1 at the first
failure with the failing command's output."""
import glob
import os
import re
import stat
import subprocess
import sys


RECIPE_DIRS = ["finetune", "post"]  # compiled at their tiny preset only
MIXED_PRECISION = ["gpt2", "bert", "llama"]  # tiny, again with --precision bf16 and fp16
OWN_FATBIN = {"gpt2-tiny", "gpt2-tiny-bf16", "t5-tiny"}  # lmc runs the real nvcc for these
# The union is compiled for the oldest target of lmc's flags (codegen/KernelCompiler.cpp:
# sm_80, sm_90 + PTX) only: the generated source has no architecture-dependent code, and
# the second target doubled this test's time (the largest of the whole suite); the
# plans of OWN_FATBIN are compiled by lmc itself with all of its flags.
UNION_NVCC_FLAGS = ["-std=c++17", "-O3", "--fatbin", "-gencode", "arch=compute_80,code=sm_80"]
PARTS = 2

# A top-level item of a generated .cu after its prelude: a body template or a
# kernel wrapper, each ending at a '}' in column 0.
ITEM = re.compile(r'^(template <typename T>\nLMC_HD void (body_[0-9a-f]+)\(|extern "C" __global__ void (lmc_k\w+)\()',
                  re.M)
PRELUDE_END = "template <int N> struct Args { void *p[N]; };\n}  // namespace lmc\n"


def run(cmd, env=None):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if proc.returncode != 0:
        print("FAILED: " + " ".join(cmd))
        print(proc.stdout)
        sys.exit(1)
    return proc.stdout


def split_source(path):
    """(prelude, [(name, text, all_storage_only)]) of one generated .cu."""
    with open(path) as f:
        text = f.read()
    cut = text.find(PRELUDE_END)
    if cut < 0:
        print(f"{path}: no prelude end")
        sys.exit(1)
    cut += len(PRELUDE_END)
    prelude, rest = text[:cut], text[cut:]
    guarded_from = rest.find("#ifdef LMC_ALL_STORAGE_TYPES")
    items = []
    for m in ITEM.finditer(rest):
        end = rest.find("\n}\n", m.start())
        if end < 0:
            print(f"{path}: an item without its closing brace at offset {m.start()}")
            sys.exit(1)
        name = m.group(2) or m.group(3)
        items.append((name, rest[m.start():end + 3], guarded_from >= 0 and m.start() > guarded_from))
    return prelude, items


def stand_in_nvcc(out_dir):
    """A compiler for lmc that writes an empty fatbin: the union compile below
    compiles these plans' kernels."""
    path = os.path.join(out_dir, "nvcc-stand-in.sh")
    with open(path, "w") as f:
        f.write('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && : > "$2"; shift; done\n')
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def main():
    models_dir, out_dir, nvcc = sys.argv[1:4]
    models = [(p, "", True) for p in sorted(glob.glob(os.path.join(models_dir, "*.lm")))]
    for sub in RECIPE_DIRS:
        models += [(p, sub + ".", False) for p in sorted(glob.glob(os.path.join(models_dir, sub, "*.lm")))]
    if not models:
        print("no models in " + models_dir)
        return 1
    stand_in_env = dict(os.environ, LMC_NVCC=stand_in_nvcc(out_dir))
    real_env = dict(os.environ, LMC_NVCC=nvcc)
    prelude, bodies, wrappers, counts = None, {}, {}, []
    total_items = 0
    for path, prefix, full_size in models:
        model = prefix + os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            has_tiny = re.search(r"^preset\s+tiny\b", f.read(), re.M) is not None
        if not full_size and not has_tiny:
            print(f"{model}: no tiny preset to compile")
            return 1
        configs = ([(model, [])] if full_size else []) + ([(model + "-tiny", ["--preset", "tiny"])] if has_tiny else [])
        if model in MIXED_PRECISION:
            configs += [(f"{model}-tiny-{p}", ["--preset", "tiny", "--precision", p]) for p in ("bf16", "fp16")]
        for name, flags in configs:
            dump = os.path.join(out_dir, name)
            own = name in OWN_FATBIN
            summary = run(["lmc", "compile", path, *flags, "--target", "cpu,cuda" if own else "cuda",
                           "--dump-dir", dump, "-o", os.path.join(out_dir, name + ".plan")],
                          env=real_env if own else stand_in_env)
            source = os.path.join(dump, "kernels.cu")
            if not os.path.exists(source):
                print(f"{name}: lmc wrote no kernels.cu")
                return 1
            this_prelude, items = split_source(source)
            if prelude is None:
                prelude = this_prelude
            elif this_prelude != prelude:
                print(f"{name}: its prelude differs from the first plan's")
                return 1
            for item_name, text, guarded in items:
                table = bodies if item_name.startswith("body_") else wrappers
                if table.setdefault(item_name, (text, guarded))[0] != text:
                    print(f"{name}: two different definitions of {item_name}")
                    return 1
            total_items += len(items)
            kernels = summary.split("generated kernels")[0].rsplit(",", 1)[-1].strip()
            counts.append((name, kernels))
    # Bodies first (every wrapper calls one), then the wrappers, the bf16/f16
    # ones under the guard as in each plan's source.
    names = sorted(wrappers)
    parts = []
    for k in range(PARTS):
        mine = names[k::PARTS]
        text = prelude + "".join(t for t, _ in bodies.values())
        text += "".join(wrappers[n][0] for n in mine if not wrappers[n][1])
        text += "#ifdef LMC_ALL_STORAGE_TYPES\n"
        text += "".join(wrappers[n][0] for n in mine if wrappers[n][1]) + "#endif\n"
        part = os.path.join(out_dir, f"union{k}.cu")
        with open(part, "w") as f:
            f.write(text)
        parts.append(part)
    procs = [subprocess.Popen([nvcc, *UNION_NVCC_FLAGS, "-DLMC_ALL_STORAGE_TYPES", "-o", p + ".fatbin", p],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for p in parts]
    for p, proc in zip(parts, procs):
        out, _ = proc.communicate()
        if proc.returncode != 0:
            print(f"FAILED: nvcc on {p}")
            print(out)
            return 1
    print(f"union: {len(bodies)} bodies and {len(wrappers)} wrappers of {total_items} items in "
          f"{len(counts)} plans, nvcc ok (f32, bf16, f16)")
    for name, kernels in counts:
        print(f"{name}: {kernels} kernels, nvcc ok")
    print("models: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

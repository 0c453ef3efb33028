"""Compiles every model in models/ for the CPU and CUDA with lmc (nvcc builds each
plan's fatbin: sm_80, sm_90 and compute_90 PTX), at its default config and, when
it has one, its `tiny` preset; then compiles each dumped CUDA source again with
every reduced-precision storage type (bf16, f16) enabled. The recipes of
models/finetune/ and models/post/ (zoo trunks with new heads and losses) are
compiled at their tiny preset only, to keep the run short: their full-size
configs generate the same trunk kernels as the zoo models above. The tiny GPT,
BERT and LLaMA are compiled again in each reduced precision (--precision bf16,
fp16: -lm-mixed-precision's casts fused into the kernels, bf16 / f16 loads and
stores in the bodies themselves), their plans' own fatbins.

Usage: compile_models_cuda.py MODELS_DIR OUT_DIR NVCC
Prints one line per model and config ("gpt2: ...", "gpt2-tiny: ...",
"post.dpo-tiny: ...") and
"models: ok" when every step succeeded; exits 1 at the first failure with the
failing command's output."""
import glob
import os
import re
import subprocess
import sys


RECIPE_DIRS = ["finetune", "post"]  # compiled at their tiny preset only
MIXED_PRECISION = ["gpt2", "bert", "llama"]  # tiny, again with --precision bf16 and fp16


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        print("FAILED: " + " ".join(cmd))
        print(proc.stdout)
        sys.exit(1)
    return proc.stdout


def main():
    models_dir, out_dir, nvcc = sys.argv[1:4]
    models = [(p, "", True) for p in sorted(glob.glob(os.path.join(models_dir, "*.lm")))]
    for sub in RECIPE_DIRS:
        models += [(p, sub + ".", False) for p in sorted(glob.glob(os.path.join(models_dir, sub, "*.lm")))]
    if not models:
        print("no models in " + models_dir)
        return 1
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
            summary = run(["lmc", "compile", path, *flags, "--target", "cpu,cuda", "--dump-dir", dump,
                           "-o", os.path.join(out_dir, name + ".plan")])
            source = os.path.join(dump, "kernels.cu")
            if not os.path.exists(source):
                print(f"{name}: lmc wrote no kernels.cu")
                return 1
            run([nvcc, "-std=c++17", "-O1", "--fatbin", "-gencode", "arch=compute_80,code=sm_80",
                 "-DLMC_ALL_STORAGE_TYPES", "-o", os.path.join(out_dir, name + ".all.fatbin"), source])
            kernels = summary.split("generated kernels")[0].rsplit(",", 1)[-1].strip()
            print(f"{name}: {kernels} kernels, nvcc ok (f32, bf16, f16)")
    print("models: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

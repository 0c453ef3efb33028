"""Runs every model in models/ fused and with --fusion=none on the same initial
weights and batches (its `tiny` preset at 2 layers where it has a `layers` constant, 2 steps) and compares the
two runs' dumps with compare_dumps.py, so a model added to models/ is covered
without editing the test.

Usage: fused_parity_models.py MODELS_DIR DATA_DIR OUT_DIR
Prints compare_dumps.py's lines prefixed with the model name, then
"models: ok"; exits 1 at the first failure (a model without a tiny preset is
one: every model in models/ must train on the CPU in CI)."""
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        print("FAILED: " + " ".join(cmd))
        print(proc.stdout)
        sys.exit(1)
    return proc.stdout


def main():
    models_dir, data, out = sys.argv[1:4]
    models = sorted(glob.glob(os.path.join(models_dir, "*.lm")))
    if not models:
        print("no models in " + models_dir)
        return 1
    for path in models:
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            text = f.read()
        if not re.search(r"^preset\s+tiny\b", text, re.M):
            print(f"{name}: no 'preset tiny' (every model needs one that trains on the CPU)")
            return 1
        # Two layers where the depth is a config constant (ELMo's two LSTM layers are its definition).
        depth = ["-D", "layers=2"] if re.search(r"\blayers\s*=", text) else []
        dumps = {}
        for mode in ("auto", "none"):
            tag = f"{name}-{mode}"
            plan = os.path.join(out, tag + ".plan")
            run(["lmc", "compile", path, "--preset", "tiny", *depth, "--fusion=" + mode, "-o", plan])
            dumps[mode] = os.path.join(out, tag)
            run(["lmrt", "run", plan, "--data", data, "--steps", "2", "--seed", "5", "--eval-batches", "0",
                 "--dump-dir", dumps[mode], "--out", os.path.join(out, tag + ".safetensors")])
        report = run([sys.executable, os.path.join(HERE, "compare_dumps.py"), dumps["none"], dumps["auto"],
                      "--steps", "2"])
        for line in report.splitlines():
            print(f"{name}: {line}")
    print("models: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

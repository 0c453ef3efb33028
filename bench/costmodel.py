"""The cost model benchmark, driven by bench/costmodel.sh: compiles each config, takes the
predicted step time from `lmc explain --format json` (step_time.predicted_seconds, with the
rates of --machine or of a fresh `lmrt calibrate`), trains it with `lmrt run` in rounds that
interleave the configs (a shared machine's speed drifts over minutes), and prints a table of
predicted vs measured: the measured figure is the median step time over every round's steps
after the warmup (a step's time is the plan's FLOPs over the GFLOP/s its progress line
reports). Logs and plans go to runs/costmodel/."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "runs", "costmodel")
LMC = os.path.join(ROOT, "build", "bin", "lmc")
LMRT = os.path.join(ROOT, "build", "bin", "lmrt")

# name, model file, flags, steps per round (the first WARMUP are not counted)
CONFIGS = [(m, f"models/{m}.lm", ["--preset", "tiny"], 40)
           for m in ["gpt2", "llama", "bert", "roberta", "albert", "electra", "deberta", "spanbert"]]
CONFIGS.append(("gpt2-small b4xs64", "models/gpt2.lm", ["--preset", "gpt2_b4t64"], 6))
WARMUP = 2


def run(cmd):
    res = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        sys.exit(f"costmodel: {' '.join(cmd)} failed:\n{res.stdout[-3000:]}")
    return res.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--machine", help="a machine file (lmrt calibrate); default: calibrate now")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", help="comma-separated config names (default: all)")
    ap.add_argument("--json", action="store_true", help="one JSON line per config instead of the table")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    configs = [c for c in CONFIGS if not args.models or c[0] in args.models.split(",")]
    machine = args.machine or os.path.join(OUT, "machine.json")
    if not args.machine:
        run([LMRT, "calibrate", "--out", machine])

    rows = {}
    for name, path, flags, _ in configs:
        slug = re.sub(r"[^a-z0-9]+", "_", name)
        plan = os.path.join(OUT, slug + ".plan")
        run([LMC, "compile", path, *flags, "-o", plan, "--overwrite"])
        ex = json.loads(run([LMC, "explain", path, *flags, "--format", "json", "--machine", machine]))
        rows[name] = dict(plan=plan, flops=ex["flops"]["total"], step=ex["step_time"], times=[])

    step_re = re.compile(r"^step\s+(\d+)/\d+ \|.*\| ([0-9.]+) GFLOP/s")
    for r in range(args.rounds):
        for name, _, _, steps in configs:
            row = rows[name]
            log = run([LMRT, "run", row["plan"], "--data", "runs/fortunes", "--steps", str(steps),
                       "--eval-batches", "0", "--seed", str(r + 1), "--out",
                       os.path.join(OUT, "w.safetensors"), "--overwrite"])
            with open(os.path.join(OUT, re.sub(r"[^a-z0-9]+", "_", name) + f".round{r}.log"), "w") as f:
                f.write(log)
            for line in log.splitlines():
                m = step_re.match(line)
                if m and int(m.group(1)) > WARMUP and float(m.group(2)) > 0:
                    row["times"].append(row["flops"] / (float(m.group(2)) * 1e9))

    print(f"rates: {machine}")
    print(f"{'config':<20} {'predicted ms':>12} {'measured ms':>12} {'error':>8}   {'kernels':>9} {'optimizer':>9}   steps")
    for name, *_ in configs:
        row = rows[name]
        pred, meas = row["step"]["predicted_seconds"], statistics.median(row["times"])
        err = (pred - meas) / meas * 100
        if args.json:
            print(json.dumps(dict(config=name, predicted_ms=pred * 1e3, measured_median_ms=meas * 1e3,
                                  error_pct=err, timed_steps=len(row["times"]),
                                  predicted_families_ms={k: v * 1e3 for k, v in row["step"]["families"].items()})))
            continue
        print(f"{name:<20} {pred * 1e3:12.2f} {meas * 1e3:12.2f} {err:+7.1f}%   "
              f"{row['step']['kernels_seconds'] * 1e3:9.2f} {row['step']['optimizer_seconds'] * 1e3:9.2f}   "
              f"{len(row['times'])}")


if __name__ == "__main__":
    main()

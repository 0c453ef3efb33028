"""The cost model benchmark, driven by bench/costmodel.sh: compiles each config, trains it
with `lmrt run` in rounds that interleave the configs (each round starting with an
`lmrt calibrate`), then takes the predicted step time from `lmc explain --format json`
(step_time.predicted_seconds) with the rates of --machine or of the calibrations (each
size's best round), and prints predicted vs measured. The measured figure of a config is the
median step time of its steps after the warmup (a step's time is the plan's FLOPs over the
GFLOP/s its progress line reports) in its least disturbed round (the lowest median): on a
shared machine a neighbour's burst (one core taken) slows a two-thread OpenMP run by 2x or
more, and the calibration keeps its best round too, so both sides are the machine's own
speed. Every round's median is printed with --json. Logs and plans go to runs/costmodel/."""
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
    calibrations = []

    rows = {}
    for name, path, flags, _ in configs:
        slug = re.sub(r"[^a-z0-9]+", "_", name)
        plan = os.path.join(OUT, slug + ".plan")
        run([LMC, "compile", path, *flags, "-o", plan, "--overwrite"])
        flops = json.loads(run([LMC, "explain", path, *flags, "--format", "json"]))["flops"]["total"]
        rows[name] = dict(plan=plan, path=path, flags=flags, flops=flops, rounds=[])

    step_re = re.compile(r"^step\s+(\d+)/\d+ \|.*\| ([0-9.]+) GFLOP/s")
    for r in range(args.rounds):
        if not args.machine:
            calibrations.append(json.loads(run([LMRT, "calibrate", "--rounds", "2", "--out", "-"]).split("\nlmrt:")[0]))
        for name, _, _, steps in configs:
            row = rows[name]
            log = run([LMRT, "run", row["plan"], "--data", "runs/fortunes", "--steps", str(steps),
                       "--eval-batches", "0", "--seed", str(r + 1), "--out",
                       os.path.join(OUT, "w.safetensors"), "--overwrite"])
            with open(os.path.join(OUT, re.sub(r"[^a-z0-9]+", "_", name) + f".round{r}.log"), "w") as f:
                f.write(log)
            times = []
            for line in log.splitlines():
                m = step_re.match(line)
                if m and int(m.group(1)) > WARMUP and float(m.group(2)) > 0:
                    times.append(row["flops"] / (float(m.group(2)) * 1e9))
            row["rounds"].append(statistics.median(times))

    if calibrations:  # each size's best round
        best = calibrations[0]
        for c in calibrations[1:]:
            for key in ("gemm_gflops", "memory_gbps"):
                best[key] = [[a[0], max(a[1], b[1])] for a, b in zip(best[key], c[key])]
            best["kernel_overhead_us"] = min(best["kernel_overhead_us"], c["kernel_overhead_us"])
            best["stream_gbps"] = max(best["stream_gbps"], c["stream_gbps"])
        with open(machine, "w") as f:
            json.dump(best, f)
    for name, *_ in configs:
        row = rows[name]
        ex = json.loads(run([LMC, "explain", row["path"], *row["flags"], "--format", "json", "--machine", machine]))
        row["step"] = ex["step_time"]

    print(f"rates: {machine}")
    print(f"{'config':<20} {'predicted ms':>12} {'measured ms':>12} {'error':>8}   {'kernels':>9} {'optimizer':>9}   round medians ms")
    for name, *_ in configs:
        row = rows[name]
        pred, meas = row["step"]["predicted_seconds"], min(row["rounds"])
        err = (pred - meas) / meas * 100
        if args.json:
            print(json.dumps(dict(config=name, predicted_ms=pred * 1e3, measured_median_ms=meas * 1e3,
                                  error_pct=err, round_medians_ms=[t * 1e3 for t in row["rounds"]],
                                  predicted_families_ms={k: v * 1e3 for k, v in row["step"]["families"].items()})))
            continue
        print(f"{name:<20} {pred * 1e3:12.2f} {meas * 1e3:12.2f} {err:+7.1f}%   "
              f"{row['step']['kernels_seconds'] * 1e3:9.2f} {row['step']['optimizer_seconds'] * 1e3:9.2f}   "
              + " ".join(f"{t * 1e3:.1f}" for t in row["rounds"]))


if __name__ == "__main__":
    main()

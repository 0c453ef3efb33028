"""Checks the learning rates of an `lmrt run --metrics` file against the
schedule of BERT's recipe (runtime/train/schedule.h): for 1-based step k
(0-based s = k - 1), peak lr, W warmup steps and S steps in all,
lr = peak (s + 1) / (W + 1) while s < W, then peak (1 - (s - W) / (S - W)),
linear decay to 0; W must be ceil(fraction x S) (HF's get_warmup_steps).

  check_recipe.py METRICS --lr PEAK --fraction F --steps S
"""
import argparse
import json
import math
import sys

ap = argparse.ArgumentParser()
ap.add_argument("metrics")
ap.add_argument("--lr", type=float, required=True)
ap.add_argument("--fraction", type=float, required=True)
ap.add_argument("--steps", type=int, required=True)
a = ap.parse_args()
rows = [json.loads(line) for line in open(a.metrics) if line.strip()]
if [r["step"] for r in rows] != list(range(1, a.steps + 1)):
    sys.exit(f"expected steps 1..{a.steps}, got {len(rows)} rows")
w = math.ceil(a.steps * a.fraction)
for r in rows:
    s = r["step"] - 1
    want = a.lr * (s + 1) / (w + 1) if s < w else a.lr * (1 - (s - w) / (a.steps - w))
    if abs(r["lr"] - want) > 1e-12 + 1e-9 * a.lr:
        sys.exit(f"step {r['step']}: lr {r['lr']!r}, expected {want!r} (warmup {w} of {a.steps})")
peak = max(rows, key=lambda r: r["lr"])
print(f"warmup {w} of {a.steps} steps, peak lr {peak['lr']:g} at step {peak['step']}, last {rows[-1]['lr']:g}: ok")

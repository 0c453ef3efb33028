"""Checks that two runs agree to a tolerance (not bit for bit): every weight within
--atol and every step's loss and grad_norm within --rtol. Used for gradient
accumulation, whose sums run in another order than one big batch's."""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "E2E", "Inputs"))
import safetensors_np  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("weights_a")
ap.add_argument("weights_b")
ap.add_argument("metrics_a")
ap.add_argument("metrics_b")
ap.add_argument("--atol", type=float, default=1e-5)
ap.add_argument("--rtol", type=float, default=1e-5)
a = ap.parse_args()

wa, wb = safetensors_np.load(a.weights_a), safetensors_np.load(a.weights_b)
if wa.keys() != wb.keys():
    sys.exit(f"tensor names differ: {sorted(wa.keys() ^ wb.keys())}")
worst = 0.0
for name in wa:
    d = float(np.max(np.abs(wa[name].astype(np.float64) - wb[name])))
    worst = max(worst, d)
    if d > a.atol:
        sys.exit(f"{name}: max |a - b| = {d:.3g} > {a.atol}")
ma = [json.loads(l) for l in open(a.metrics_a)]
mb = [json.loads(l) for l in open(a.metrics_b)]
if len(ma) != len(mb):
    sys.exit(f"{len(ma)} vs {len(mb)} metrics lines")
for x, y in zip(ma, mb):
    for k in ("loss", "grad_norm", "lr"):
        if abs(x[k] - y[k]) > a.rtol * abs(x[k]):
            sys.exit(f"step {x['step']}: {k} {x[k]} vs {y[k]}")
print(f"close: {len(wa)} tensors, max weight difference {worst:.3g}; {len(ma)} steps of losses within {a.rtol}")

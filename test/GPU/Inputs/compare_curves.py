"""Compares two `lmrt run --metrics` files step by step (the CPU run and the GPU run
of one plan, seed and data): the losses agree closely at first and stay within a
bound as fp32 rounding differences (other summation orders, another exp) compound
over training; both runs must have trained (the loss fell by --min-drop nats)."""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("a")
ap.add_argument("b")
ap.add_argument("--steps", type=int, required=True)
ap.add_argument("--first-rel", type=float, default=1e-4, help="step 1: |a - b| <= this * |a|")
ap.add_argument("--early-steps", type=int, default=10)
ap.add_argument("--early-rel", type=float, default=1e-3, help="steps 2..early: |a - b| <= this * |a|")
ap.add_argument("--max-abs", type=float, default=0.05, help="every step: |a - b| <= this (nats)")
ap.add_argument("--min-drop", type=float, default=1.0)
args = ap.parse_args()

def load(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    return {r["step"]: r for r in rows}

a, b = load(args.a), load(args.b)
for name, rows in (("a", a), ("b", b)):
    if sorted(rows) != list(range(1, args.steps + 1)):
        sys.exit(f"{name}: expected steps 1..{args.steps}, got {len(rows)} rows")
worst = 0.0
for s in range(1, args.steps + 1):
    la, lb = a[s]["loss"], b[s]["loss"]
    d = abs(la - lb)
    worst = max(worst, d)
    bound = args.max_abs
    if s == 1:
        bound = args.first_rel * abs(la)
    elif s <= args.early_steps:
        bound = min(bound, args.early_rel * abs(la))
    if d > bound:
        sys.exit(f"step {s}: loss {la:.6f} vs {lb:.6f} differ by {d:.2e} > {bound:.2e}")
for name, rows in (("a", a), ("b", b)):
    drop = rows[1]["loss"] - rows[args.steps]["loss"]
    if drop < args.min_drop:
        sys.exit(f"{name}: loss fell by {drop:.3f} < {args.min_drop} nats")
print(f"curves: {args.steps} steps, first loss {a[1]['loss']:.5f} vs {b[1]['loss']:.5f}, "
      f"last {a[args.steps]['loss']:.4f} vs {b[args.steps]['loss']:.4f}, max |diff| {worst:.2e}: ok")

"""Compares a tensor-parallel run with the one-process run of the same model
(test/E2E/tensor-parallel.test, docs/distributed.md "Tensor parallelism").

  check_tp.py losses A.jsonl B.jsonl TOL [GRAD_TOL]
                                           every step's loss and grad_norm (and each
                                           val_loss) of A within TOL relative of B's
                                           (grad_norm within GRAD_TOL when given)
  check_tp.py weights A.safetensors B.safetensors TOL [--noise NAME:START:END:ATOL ...]
                                           the same tensor names and shapes, and every
                                           tensor's max |a - b| within TOL of its max |b|;
                                           elements START:END of NAME (flat) within ATOL
                                           instead: a key projection's bias, whose gradient
                                           is 0 in exact arithmetic (softmax does not see
                                           it), so that AdamW's normalised steps make its
                                           values rounding noise of either run (|b| ~ 1e-6)

Prints the largest differences it found; exits non-zero naming the first value
out of tolerance. Also fails when the two agree bit for bit on everything: the
runs are different arithmetic (another summation order), so identical bytes
would mean the comparison read the same file twice."""
import json
import sys

import numpy as np

from safetensors_np import load


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def losses(a_path, b_path, tol, grad_tol=None):
    a = [json.loads(line) for line in open(a_path)]
    b = [json.loads(line) for line in open(b_path)]
    if len(a) != len(b) or not a:
        sys.exit(f"{a_path} has {len(a)} steps, {b_path} {len(b)}")
    worst = {}
    identical = True
    for x, y in zip(a, b):
        if x["step"] != y["step"]:
            sys.exit(f"step {x['step']} of {a_path} against step {y['step']} of {b_path}")
        for key in ("loss", "grad_norm", "val_loss"):
            if (key in x) != (key in y):
                sys.exit(f"step {x['step']}: {key} in one file only")
            if key not in x:
                continue
            r = rel(x[key], y[key])
            identical = identical and x[key] == y[key]
            worst[key] = max(worst.get(key, 0.0), r)
            limit = grad_tol if key == "grad_norm" and grad_tol is not None else tol
            if r > limit:
                sys.exit(f"step {x['step']}: {key} {x[key]!r} vs {y[key]!r}, relative {r:.3e} > {limit:g}")
    print(f"{len(a)} steps; max relative difference: " +
          ", ".join(f"{k} {v:.2e}" for k, v in sorted(worst.items())))
    if identical:
        sys.exit("the two runs' metrics are identical: not a comparison of two runs")


def weights(a_path, b_path, tol, *noise_args):
    noise = {}
    for spec in noise_args:
        name, start, end, atol = spec.split(":")
        noise[name] = (int(start), int(end), float(atol))
    a, b = load(a_path), load(b_path)
    if sorted(a) != sorted(b):
        sys.exit(f"tensor names differ: {sorted(set(a) ^ set(b))}")
    worst, where, identical = 0.0, "", True
    for name in sorted(a):
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        if x.shape != y.shape:
            sys.exit(f"{name}: {list(x.shape)} vs {list(y.shape)}")
        identical = identical and a[name].tobytes() == b[name].tobytes()
        if name in noise:
            start, end, atol = noise[name]
            x, y = x.reshape(-1).copy(), y.reshape(-1).copy()
            d = float(np.max(np.abs(x[start:end] - y[start:end])))
            print(f"{name}[{start}:{end}]: max |difference| {d:.2e} (|values| <= {np.max(np.abs(y[start:end])):.2e})")
            if d > atol:
                sys.exit(f"{name}[{start}:{end}]: max |difference| {d:.3e} > {atol:g}")
            x[start:end] = y[start:end] = 0
        r = float(np.max(np.abs(x - y))) / max(float(np.max(np.abs(y))), 1e-30)
        if r > worst:
            worst, where = r, name
        if r > tol:
            sys.exit(f"{name}: max |difference| {r:.3e} of its max |value| > {tol:g}")
    print(f"{len(a)} tensors; largest difference {worst:.2e} of the tensor's max |value| ({where})")
    if identical:
        sys.exit("the two weights files are identical: not a comparison of two runs")


if __name__ == "__main__":
    mode, a, b, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    if mode == "losses":
        losses(a, b, tol, *[float(x) for x in sys.argv[5:6]])
    else:
        weights(a, b, tol, *[x for x in sys.argv[5:] if x != "--noise"])

"""Compares what `lmrt eval` and `lmrt forward` print or write on two devices (the GPU
and the CPU, on the same plan and weights), and makes the token input of a forward run.

  eval A B      two `lmrt eval` outputs: the same "name: number" lines, each number
                within --rtol of A's (accuracies, fractions of predictions, within
                --acc-atol: one flipped argmax moves them by 1/predictions)
  tensors A B   two safetensors files with the same tensors: every element within
                --atol-scale * max|A| of A's
  tokens SHARD OUT --rows R --seq T
                the first R * T tokens of an LMC shard as one i32 [R, T] tensor
                "tokens", the input `lmrt forward --tokens` takes
Numpy only (the GPU machine's Python; no torch)."""
import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "E2E", "Inputs"))
import safetensors_np  # noqa: E402


def eval_values(path):
    """{name: number} of the `name: number ...` lines (the data line has no number first)."""
    out = {}
    for line in open(path):
        m = re.match(r"^([a-z_ ]+): (-?[0-9.]+(?:e[-+]?[0-9]+)?|nan|inf)\b", line.strip())
        if m:
            out[m.group(1)] = float(m.group(2))
    if "val loss" not in out:
        sys.exit(f"{path}: no 'val loss:' line")
    return out


def cmd_eval(a):
    x, y = eval_values(a.a), eval_values(a.b)
    if sorted(x) != sorted(y):
        sys.exit(f"eval: different lines: {sorted(x)} vs {sorted(y)}")
    for name in sorted(x):
        vx, vy = x[name], y[name]
        bound = a.acc_atol if "accuracy" in name else a.rtol * abs(vx)
        if not abs(vx - vy) <= bound:  # also false for nan
            sys.exit(f"eval: {name} {vx} vs {vy} differ by {abs(vx - vy):.3g} > {bound:.3g}")
    print(f"eval: val loss {x['val loss']:.6f} vs {y['val loss']:.6f}, {len(x)} values: ok")


def cmd_tensors(a):
    x, y = safetensors_np.load(a.a), safetensors_np.load(a.b)
    if sorted(x) != sorted(y):
        sys.exit(f"tensors: different names: {sorted(x)} vs {sorted(y)}")
    for name in sorted(x):
        tx, ty = x[name].astype(np.float64), y[name].astype(np.float64)
        if tx.shape != ty.shape:
            sys.exit(f"tensors: {name}: shape {list(tx.shape)} vs {list(ty.shape)}")
        scale = float(np.max(np.abs(tx))) if tx.size else 0.0
        diff = float(np.max(np.abs(tx - ty))) if tx.size else 0.0
        bound = a.atol_scale * scale
        if not np.all(np.isfinite(ty)) or not diff <= bound:
            sys.exit(f"tensors: {name}: max |diff| {diff:.3g} > {bound:.3g} (max |a| {scale:.3g})")
        dtype = {np.float32: "f32", np.float64: "f64", np.int32: "i32"}[x[name].dtype.type]
        print(f"{name} {dtype}{list(tx.shape)}: max |diff| {diff:.3g} (bound {bound:.3g}): ok")


def cmd_tokens(a):
    raw = np.fromfile(a.a, dtype=np.uint8)
    if raw[:8].tobytes() != b"LMCSHARD":
        sys.exit(f"{a.a}: not an LMC shard")
    width = int(raw[12:16].view(np.uint32)[0])
    count = int(raw[16:24].view(np.uint64)[0])
    need = a.rows * a.seq
    if count < need:
        sys.exit(f"{a.a}: {count} tokens, fewer than {need}")
    body = raw[32:32 + width * need].view(np.uint16 if width == 2 else np.uint32)
    safetensors_np.save(a.b, {"tokens": body.astype(np.int32).reshape(a.rows, a.seq)})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=["eval", "tensors", "tokens"])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--acc-atol", type=float, default=0.01)
    ap.add_argument("--atol-scale", type=float, default=1e-4)
    ap.add_argument("--rows", type=int, default=0)
    ap.add_argument("--seq", type=int, default=0)
    a = ap.parse_args()
    {"eval": cmd_eval, "tensors": cmd_tensors, "tokens": cmd_tokens}[a.cmd](a)


if __name__ == "__main__":
    main()

"""Checks that two safetensors files hold the same tensors, bit for bit (names,
shapes, dtypes and bytes), whatever their metadata; prints how many, or fails
naming the first that differs. Usage: same_tensors.py A B [--prefix P] (only
tensors whose name starts with P)."""
import sys

import numpy as np

from safetensors_np import load


def main():
    args = sys.argv[1:]
    prefix = ""
    if "--prefix" in args:
        i = args.index("--prefix")
        prefix = args[i + 1]
        del args[i:i + 2]
    a, b = (load(p) for p in args)
    a = {k: v for k, v in a.items() if k.startswith(prefix)}
    b = {k: v for k, v in b.items() if k.startswith(prefix)}
    if sorted(a) != sorted(b):
        sys.exit(f"tensor names differ: {sorted(set(a) ^ set(b))}")
    if not a:
        sys.exit(f"no tensor named {prefix}*")
    for name in sorted(a):
        x, y = a[name], b[name]
        if x.shape != y.shape or x.dtype != y.dtype or x.tobytes() != y.tobytes():
            sys.exit(f"{name} differs: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}")
    print(f"{len(a)} tensors identical")


if __name__ == "__main__":
    main()

"""Checks a LoRA fine-tune (test/E2E/lora.test): every tensor of the base weights
is in the fine-tuned file bit for bit (the bytes compared, as cmp would), every
adapter B has left zero, and the validation loss fell by at least --margin.

Usage: check_lora.py BASE.safetensors FINAL.safetensors --before EVAL.txt --after EVAL.txt --margin M
(EVAL.txt: `lmrt eval`'s output, its "val loss: X nats/token" line.)
"""
import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402


def val_loss(path):
    m = re.search(r"val loss: ([0-9.]+)", open(path).read())
    if not m:
        sys.exit(f"{path}: no 'val loss:' line")
    return float(m.group(1))


ap = argparse.ArgumentParser()
ap.add_argument("base")
ap.add_argument("final")
ap.add_argument("--before", required=True)
ap.add_argument("--after", required=True)
ap.add_argument("--margin", type=float, required=True)
a = ap.parse_args()
base, final = safetensors_np.load(a.base), safetensors_np.load(a.final)
failed = False
for name, x in sorted(base.items()):
    y = final.get(name)
    if y is None or y.dtype != x.dtype or y.shape != x.shape or y.tobytes() != x.tobytes():
        print(f"{name}: base tensor changed FAIL")
        failed = True
print(f"base: {len(base)} tensors bit-identical" + (" FAIL" if failed else " ok"))
adapters = sorted(n for n in final if n.endswith(".lora_B"))
moved = [n for n in adapters if np.any(final[n] != 0)]
ok = adapters and len(moved) == len(adapters)
failed |= not ok
print(f"adapters: {len(moved)} of {len(adapters)} B matrices trained {'ok' if ok else 'FAIL'}")
before, after = val_loss(a.before), val_loss(a.after)
ok = after <= before - a.margin
failed |= not ok
print(f"val loss {before:.4f} -> {after:.4f} (needs a fall of {a.margin}) {'ok' if ok else 'FAIL'}")
sys.exit(1 if failed else 0)

"""Checks frozen parameters across training (test/E2E/frozen-params.test): every
parameter named with --frozen is bit for bit the same in the final weights as in
the dump's initial ones, and every other parameter has changed.

Usage: check_frozen.py INIT.safetensors FINAL.safetensors --frozen NAME...
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("init")
ap.add_argument("final")
ap.add_argument("--frozen", nargs="+", required=True)
a = ap.parse_args()
init, final = safetensors_np.load(a.init), safetensors_np.load(a.final)
bad = 0
for name in sorted(init):
    same = init[name].tobytes() == final[name].tobytes()
    frozen = name in a.frozen
    ok = same if frozen else not same
    bad += not ok
    print(f"{name}: {'frozen' if frozen else 'trained'}, "
          f"{'unchanged' if same else 'max change %.3g' % float(np.max(np.abs(final[name] - init[name])))} "
          f"{'ok' if ok else 'FAIL'}")
missing = set(a.frozen) - set(init)
if missing:
    sys.exit("no such parameters: " + ", ".join(sorted(missing)))
print("frozen: " + ("ok" if not bad else f"FAILED ({bad})"))
sys.exit(1 if bad else 0)

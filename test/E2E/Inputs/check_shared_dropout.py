"""Checks the weights one SGD step at lr 1 leaves in Inputs/shared_dropout.lm's
zero tables a and b (test/E2E/deberta-pos-dropout.test): each is -mask / (1 - p)
for the shared dropout's mask. `check_shared_dropout.py W.safetensors P` checks
that every element is 0 (dropped) or -1 / (1 - P) (kept, to 1e-6), that each
table's dropped share is P within 5 standard deviations of a Bernoulli(P)
count, and that the two calls drew different masks (their agreement is
P^2 + (1 - P)^2 within 5 standard deviations, not 1)."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import safetensors_np  # noqa: E402

t = safetensors_np.load(sys.argv[1])
p = float(sys.argv[2])
kept = -1.0 / (1.0 - p)
ok = True
masks = []
for name in ("a", "b"):
    w = t[name].astype(np.float64).ravel()
    dropped = w == 0
    bad = np.abs(w[~dropped] - kept) > 1e-6 * abs(kept)
    n = w.size
    share = dropped.mean()
    tol = 5 * math.sqrt(p * (1 - p) / n)
    good = not bad.any() and abs(share - p) <= tol
    ok &= good
    print(f"{name}: {n} elements, dropped {share:.4f} (p {p}, tolerance {tol:.4f}), "
          f"{int(bad.sum())} kept values other than {kept:.6f}: {'ok' if good else 'WRONG'}")
    masks.append(dropped)
agree = (masks[0] == masks[1]).mean()
want = p * p + (1 - p) * (1 - p)
tol = 5 * math.sqrt(want * (1 - want) / masks[0].size)
good = abs(agree - want) <= tol
ok &= good
print(f"a and b masks agree on {agree:.4f} of the elements (independent: {want:.4f}): "
      f"{'ok' if good else 'NOT INDEPENDENT'}")
print("shared dropout: " + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)

"""Compares the train-step losses `lmrt gradcheck` printed for two plans
(test/E2E/attention-dropout.test): `check_same_loss.py A B [C]` says whether A's
and B's losses agree to 1e-9 relative and, given C (the same model without
dropout), that C's differs from A's by more than 1e-3 relative (so an agreement
cannot come from neither plan dropping anything)."""
import re
import sys


def loss(path):
    with open(path) as f:
        m = re.search(r"loss (\S+),", f.read())
    if not m:
        sys.exit(f"{path}: no 'loss' line")
    return float(m.group(1))


a, b = loss(sys.argv[1]), loss(sys.argv[2])
rel = abs(a - b) / max(abs(a), 1e-30)
print(f"losses {a:.10g} and {b:.10g}: rel diff {rel:.3e} {'ok' if rel <= 1e-9 else 'DIFFERENT'}")
if len(sys.argv) > 3:
    c = loss(sys.argv[3])
    rc = abs(a - c) / max(abs(a), 1e-30)
    print(f"without dropout {c:.10g}: rel diff {rc:.3e} {'ok' if rc > 1e-3 else 'TOO CLOSE'}")

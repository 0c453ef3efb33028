"""Compares two `lmrt run --dump-dir` records step by step: the loss and every
parameter's raw gradient (and, with --params, the updated parameters); where the
plan samples (lm.sample), the logits it sampled from, and its draws must be equal.

Used to check that a fused plan computes what the unfused one does. Errors are
relative to the largest magnitude of the reference tensor, so a tensor whose
entries are all tiny is still held to the same relative accuracy, down to 1e-4 of
the largest gradient entry of the step: below that a gradient is rounding noise
around an exact zero (the key biases of attention: softmax ignores a shift of a
whole row of scores), and is compared against that floor.
Exit status 1 when any value is off by more than its tolerance."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import load  # noqa: E402


def rel_err(ref, got, floor=1e-30):
    scale = max(float(np.abs(ref).max()), floor)
    return float(np.abs(ref.astype(np.float64) - got.astype(np.float64)).max()) / scale


def main():
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("candidate")
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--loss-rtol", type=float, default=1e-6)
    p.add_argument("--grad-rtol", type=float, default=1e-5)
    args = p.parse_args()
    ok = True
    for step in range(1, args.steps + 1):
        ref = load(f"{args.reference}/step{step}.safetensors")
        got = load(f"{args.candidate}/step{step}.safetensors")
        # The batch: "tokens" (causal) or the inputs of another transform (ids, labels, ...).
        # The logits lm.sample drew from (sample<j>.logits) are compared like gradients
        # below; its draws (sample<j>.ids) must be equal, as the batch.
        outside = lambda k: k in ("loss", "lr") or k.startswith(("grad.", "param.")) or k.endswith(".logits")  # noqa: E731
        inputs = [k for k in ref if not outside(k)]
        if sorted(inputs) != sorted(k for k in got if not outside(k)) \
                or not all(np.array_equal(ref[k], got[k]) for k in inputs):
            print(f"step {step}: the two runs saw different batches (or drew different samples)")
            return 1
        for k in sorted(k for k in ref if k.startswith("sample") and k.endswith(".logits")):
            err = rel_err(ref[k], got[k])
            verdict = "ok" if err <= args.grad_rtol else "FAIL"
            ok &= verdict == "ok"
            print(f"step {step}: {k} rel err {err:.2e} {verdict}")
        err = rel_err(ref["loss"], got["loss"])
        verdict = "ok" if err <= args.loss_rtol else "FAIL"
        ok &= verdict == "ok"
        print(f"step {step}: loss {float(ref['loss']):.8f} vs {float(got['loss']):.8f}, rel err {err:.2e} {verdict}")
        grads = sorted(k for k in ref if k.startswith("grad."))
        if set(grads) != {k for k in got if k.startswith("grad.")}:
            print(f"step {step}: the runs have different parameters")
            return 1
        floor = 1e-4 * max(float(np.abs(ref[k]).max()) for k in grads)
        worst, worst_name = max((rel_err(ref[k], got[k], floor), k) for k in grads)
        verdict = "ok" if worst <= args.grad_rtol else "FAIL"
        ok &= verdict == "ok"
        print(f"step {step}: {len(grads)} gradients, max rel err {worst:.2e} ({worst_name}) {verdict}")
    print("compare: ok" if ok else "compare: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

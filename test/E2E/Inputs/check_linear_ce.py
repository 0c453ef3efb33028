"""Checks the fused linear cross-entropy against the reference path: reads lmc's
summary lines of the two plans (REF=FILE and FUSED=FILE) and their `lmrt run
--dump-dir` records, and checks that the fused plan predicts a lower peak and that
its loss agrees with the reference's at every step to --loss-rtol (the chunked
GEMMs of the fused op sum in another order than the whole GEMM, so the losses need
not be the same bits)."""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import load  # noqa: E402


def peak(path):
    text = open(path).read()
    m = re.search(r"predicted peak memory [^(]*\(([0-9,]+) bytes\)", text)
    if not m:
        sys.exit(f"{path}: no predicted peak in lmc's output:\n{text}")
    return int(m.group(1).replace(",", ""))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ref-summary", required=True)
    p.add_argument("--fused-summary", required=True)
    p.add_argument("--ref-dump", required=True)
    p.add_argument("--fused-dump", required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--loss-rtol", type=float, default=1e-5)
    args = p.parse_args()
    ok = True
    ref_peak, fused_peak = peak(args.ref_summary), peak(args.fused_summary)
    lower = fused_peak < ref_peak
    ok &= lower
    print(f"peak: fused {fused_peak} bytes {'<' if lower else '>='} reference {ref_peak} "
          f"({ref_peak - fused_peak} bytes less)")
    for step in range(1, args.steps + 1):
        ref = float(load(f"{args.ref_dump}/step{step}.safetensors")["loss"].reshape(-1)[0])
        got = float(load(f"{args.fused_dump}/step{step}.safetensors")["loss"].reshape(-1)[0])
        err = abs(got - ref) / max(abs(ref), 1e-30)
        good = err <= args.loss_rtol
        ok &= good
        print(f"step {step}: loss {ref:.7f} vs {got:.7f}, rel err {err:.1e} {'ok' if good else 'FAILED'}")
    print("linear cross-entropy: ok" if ok else "linear cross-entropy: FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

"""Compares the last validation loss of two `lmrt run --metrics` files: an fp32
run (the reference) and a mixed-precision one. Prints both and their relative
difference; exit status 1 when the difference exceeds --rtol or either run did
not learn (its validation loss is not below --below)."""
import argparse
import json
import sys


def last_val_loss(path):
    loss = None
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if "val_loss" in row:
                loss = row["val_loss"]
    if loss is None:
        sys.exit(f"{path}: no val_loss")
    return loss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("candidate")
    p.add_argument("--rtol", type=float, required=True)
    p.add_argument("--below", type=float, required=True)
    p.add_argument("--label", default="bf16", help="the candidate's precision, for the line printed")
    a = p.parse_args()
    ref, got = last_val_loss(a.reference), last_val_loss(a.candidate)
    rel = abs(got - ref) / ref
    ok = rel <= a.rtol and ref < a.below and got < a.below
    print(f"val_loss fp32 {ref:.4f} {a.label} {got:.4f}, rel diff {rel:.2e} (rtol {a.rtol:g}) {'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

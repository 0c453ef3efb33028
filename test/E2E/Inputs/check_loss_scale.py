"""Checks fp16's loss scaler in an `lmrt run --metrics` file: each step's
loss_scale is the one expected (--scales, comma-separated, one a step), exactly
the steps --skipped (comma-separated; may be empty) are marked skipped, and every
loss and gradient norm of a step that was not skipped is finite. Prints one line
per check; exit status 1 on the first failure."""
import argparse
import json
import math
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("metrics")
    p.add_argument("--scales", required=True)
    p.add_argument("--skipped", default="")
    a = p.parse_args()
    rows = [json.loads(line) for line in open(a.metrics)]
    scales = [float(s) for s in a.scales.split(",")]
    skipped = {int(s) for s in a.skipped.split(",") if s}
    if len(rows) != len(scales):
        sys.exit(f"FAIL: {len(rows)} steps in {a.metrics}, {len(scales)} scales expected")
    for row, scale in zip(rows, scales):
        step = row["step"]
        if row.get("loss_scale") != scale:
            sys.exit(f"FAIL: step {step}: loss_scale {row.get('loss_scale')}, expected {scale:g}")
        if bool(row.get("skipped")) != (step in skipped):
            sys.exit(f"FAIL: step {step}: skipped {bool(row.get('skipped'))}, expected {step in skipped}")
        if step not in skipped and not (math.isfinite(row["loss"]) and math.isfinite(row["grad_norm"])):
            sys.exit(f"FAIL: step {step}: loss {row['loss']} grad_norm {row['grad_norm']}")
    print(f"loss scales ok over {len(rows)} steps; skipped {sorted(skipped)}")


if __name__ == "__main__":
    main()

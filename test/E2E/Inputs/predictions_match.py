"""Checks that two `lmrt eval --predictions` files (a packed plan's and the
padded plan's, on the same weights and validation records) hold the same
records in the same order, with the same labels, and predictions (classify:
every logit; regression: the prediction) equal to --rtol of the largest;
span lines (a packed span plan's against the padded plan's with
mask_padding = 1) must be equal in every field but the null score: the
gold and the predicted positions, the window, the answer's text.

  predictions_match.py PACKED.jsonl PADDED.jsonl [--rtol 1e-5]
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("packed")
    ap.add_argument("padded")
    ap.add_argument("--rtol", type=float, default=1e-5)
    a = ap.parse_args()
    packed = [json.loads(line) for line in open(a.packed)]
    padded = [json.loads(line) for line in open(a.padded)]
    order = [p["record"] for p in packed] == [q["record"] for q in padded] == list(range(len(padded)))
    if padded and "pred_start" in padded[0]:
        fields = ("window", "start", "end", "pred_start", "pred_end", "prediction", "answers")
        differ = [q["record"] for p, q in zip(packed, padded) if any(p.get(f) != q.get(f) for f in fields)]
        ok = order and len(packed) == len(padded) and not differ
        answered = sum(1 for q in padded if q["prediction"])
        print(f"span predictions: {len(packed)} packed, {len(padded)} padded lines; record order {order}, "
              f"{answered} answered, lines differing: {differ}: " + ("ok" if ok else "FAILED"))
        return 0 if ok else 1
    labels = all(p["label"] == q["label"] for p, q in zip(packed, padded))

    def values(line):
        return line["logits"] if "logits" in line else [line["prediction"]]

    scale = max(abs(x) for q in padded for x in values(q))
    worst = max(abs(x - y) for p, q in zip(packed, padded) for x, y in zip(values(p), values(q))) / scale
    shapes = all(len(values(p)) == len(values(q)) for p, q in zip(packed, padded))
    ok = order and labels and shapes and len(packed) == len(padded) and worst <= a.rtol
    print(f"predictions: {len(packed)} packed, {len(padded)} padded lines; record order {order}, labels {labels}, "
          f"max diff {worst:.1e} of the largest: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Checks `lmrt metrics --format json` of classification predictions against
the majority-class baseline of the dataset's meta.json: the classifier that
always answers the most frequent training label, scored on the validation
labels. Fails unless accuracy and macro-F1 each beat it by the given margins.

  check_classify_margin.py META.json METRICS.json --acc-margin A --f1-margin F
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("meta")
    ap.add_argument("metrics")
    ap.add_argument("--acc-margin", type=float, required=True)
    ap.add_argument("--f1-margin", type=float, required=True)
    a = ap.parse_args()
    meta = json.load(open(a.meta))
    train, val = meta["train"]["label_counts"], meta["val"]["label_counts"]
    major = train.index(max(train))
    n = sum(val)
    acc0 = val[major] / n
    # Macro-F1 over the classes in labels or predictions (sklearn's), of the constant answer:
    # only the majority class has a nonzero F1, 2 tp / (2 tp + fp + fn) = 2 v / (n + v).
    classes = sum(1 for k, v in enumerate(val) if v > 0 or k == major)
    f10 = 2 * val[major] / (n + val[major]) / classes
    m = json.load(open(a.metrics))["metrics"]
    acc, f1 = m["accuracy"], m["f1_macro"]
    print(f"majority class {major}: accuracy {acc0:.4f}, macro-F1 {f10:.4f}; model: accuracy {acc:.4f}, "
          f"macro-F1 {f1:.4f}")
    ok = acc >= acc0 + a.acc_margin and f1 >= f10 + a.f1_margin
    print("margin: " + ("ok" if ok else f"FAILED (needs +{a.acc_margin} accuracy, +{a.f1_margin} macro-F1)"))
    sys.exit(0 if ok else 1)


main()

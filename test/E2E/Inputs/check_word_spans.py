"""Checks that the span_mlm batches of an `lmrt run --dump-dir` dump (unit "word",
byte data) mask whole words: in the original row (labels where masked, ids
elsewhere) every span, a run of masked positions, starts at a word's first byte
(after whitespace, or at the row's first text byte, which the transform takes
only when the byte before the row is whitespace) and ends at a word's last byte
(before whitespace or [SEP]), except at most one span a row: the one cut to the
budget, which may end inside a word. Also that spans never touch and that every
row masks exactly ceil(mask_prob x (seq - 2)) bytes.

Usage: check_word_spans.py --dump DIR [--mask-prob P]
"""
import argparse
import glob
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

SPACE = frozenset(b" \t\n\v\f\r")


def row_problems(orig, labels, budget):
    problems, cut, masked, i, t = [], 0, 0, 1, len(labels)
    while i < t - 1:
        if labels[i] == -100:
            i += 1
            continue
        s = i
        while labels[i] != -100:
            i += 1
        e = i - 1
        masked += e - s + 1
        if s > 1 and orig[s - 1] not in SPACE:
            problems.append(f"span [{s}, {e}] starts inside a word")
        if orig[s] in SPACE:
            problems.append(f"span [{s}, {e}] starts with whitespace")
        cut += not (e + 1 == t - 1 or orig[e + 1] in SPACE)
    if cut > 1:
        problems.append(f"{cut} spans end inside a word")
    if masked != budget:
        problems.append(f"{masked} bytes masked, not the budget {budget}")
    return problems, cut


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--mask-prob", type=float, default=0.15)
    a = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(a.dump, "step*.safetensors")))
    if not paths:
        sys.exit("no step*.safetensors in " + a.dump)
    failures = 0
    for path in paths:
        dump = safetensors_np.load(path)
        labels, ids = dump["labels"].astype(np.int64), dump["ids"].astype(np.int64)
        orig = np.where(labels != -100, labels, ids)
        budget = math.ceil(a.mask_prob * (labels.shape[1] - 2) - 1e-9)
        spans = cuts = 0
        for r in range(labels.shape[0]):
            problems, cut = row_problems(orig[r], labels[r], budget)
            cuts += cut
            spans += int(np.sum((labels[r, 1:] != -100) & (labels[r, :-1] == -100)))
            for m in problems:
                print(f"{os.path.basename(path)}: row {r}: {m}")
            failures += len(problems)
        print(f"{os.path.basename(path)}: {spans} spans of whole words, {cuts} cut to the budget inside a word")
    print("word spans: " + ("ok" if failures == 0 else f"FAILED ({failures} problems)"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

"""Checks `lmrt eval --predictions` on a seq2seq plan (test/E2E/seq2seq-train.test):
PRED.jsonl (one line a validation record) against the records it came from
(RECORDS.jsonl, what `lmrt data build` read), the scores printed by lmrt eval
(EVAL.txt, its stdout) recomputed here from the file, and, with --sample, the
first lines' predictions against `lmrt sample --temperature 0 --format json`
of their inputs (the same greedy decoding one record at a time).

The scores: exact match of the strings; SQuAD's exact match and token F1 of
the normalised strings (evaluate-v1.1.py's normalize_answer and f1_score,
written out below). Fails below --min-em.

Usage: check_seq2seq_predictions.py PRED.jsonl EVAL.txt RECORDS.jsonl --min-em X
                                    [--sample OUT.jsonl --prompts PROMPTS.txt --count N]
"""
import argparse
import collections
import json
import re
import string
import sys

ap = argparse.ArgumentParser()
ap.add_argument("pred")
ap.add_argument("eval_out")
ap.add_argument("records")
ap.add_argument("--min-em", type=float, required=True)
ap.add_argument("--prompts", help="write the first --count inputs here, one a line (then exit)")
ap.add_argument("--count", type=int, default=0)
ap.add_argument("--sample", help="lmrt sample --format json of the --prompts file")
a = ap.parse_args()

pred = [json.loads(line) for line in open(a.pred, encoding="utf-8") if line.strip()]
if a.prompts:
    with open(a.prompts, "w", encoding="utf-8") as f:
        for p in pred[:a.count]:
            f.write(p["input"] + "\n")
    print(f"wrote {min(a.count, len(pred))} prompts")
    sys.exit(0)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


# evaluate-v1.1.py
def normalize_answer(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def f1_score(prediction, ground_truth):
    p, g = normalize_answer(prediction).split(), normalize_answer(ground_truth).split()
    common = collections.Counter(p) & collections.Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


source = {(r["input"], r["target"]) for r in (json.loads(l) for l in open(a.records, encoding="utf-8") if l.strip())}
for i, p in enumerate(pred):
    if p["record"] != i:
        fail(f"line {i + 1} is record {p['record']}, expected {i}")
    if (p["input"], p["target"]) not in source:
        fail(f"record {i}: ({p['input']!r}, {p['target']!r}) is not a record of {a.records}")
    if p["answers"] != [p["target"]]:
        fail(f"record {i}: answers {p['answers']!r} is not [target]")

n = len(pred)
exact = sum(p["prediction"] == p["target"] for p in pred)
want = {
    "exact_match": exact / n,
    "squad_exact_match": sum(normalize_answer(p["prediction"]) == normalize_answer(p["target"]) for p in pred) / n,
    "squad_f1": sum(f1_score(p["prediction"], p["target"]) for p in pred) / n,
}
printed = {}
for line in open(a.eval_out, encoding="utf-8"):
    m = re.match(r"(exact_match|squad_exact_match|squad_f1): ([0-9.]+)", line)
    if m:
        printed[m.group(1)] = float(m.group(2))
    m = re.match(r"wrote .*: (\d+) predictions", line)
    if m and int(m.group(1)) != n:
        fail(f"lmrt eval says {m.group(1)} predictions, the file has {n}")
for k, v in want.items():
    if k not in printed:
        fail(f"lmrt eval printed no {k}")
    if abs(printed[k] - v) > 1e-6:
        fail(f"{k}: lmrt eval printed {printed[k]:.6f}, recomputed {v:.6f}")

if a.sample:
    got = [json.loads(line) for line in open(a.sample, encoding="utf-8") if line.strip()]
    for p, g in zip(pred, got):
        if g["prompt"] != p["input"] or g["completion"] != p["prediction"] or (g["finish_reason"] == "eos") != p["eos"]:
            fail(f"record {p['record']}: lmrt sample gives {g!r}, --predictions {p!r}")
    print(f"lmrt sample agrees on {len(got)} records")

ok = want["exact_match"] >= a.min_em
print(f"recomputed: exact match {exact} of {n} = {want['exact_match']:.6f}, squad exact match "
      f"{want['squad_exact_match']:.6f}, f1 {want['squad_f1']:.6f} (at least {a.min_em} exact) {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)

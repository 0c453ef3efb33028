"""Checks `lmrt metrics --format json` of span predictions against the trivial
answers on the same validation records (VAL.jsonl, SQuAD-shaped, as
scripts/span_jsonl.py writes them): the context's first word, and its first
word of 4 or more letters (the questions are such words). Fails unless the
model's exact match beats the better of the two by the margin. With
--predictions (lmrt eval's file for the same records, in order) it first
checks each line: its gold answer is the record's, its gold positions span
that many bytes, and its prediction is the text of pred_start..pred_end.

  check_span_em.py VAL.jsonl METRICS.json --margin M [--predictions PRED.jsonl]
"""
import argparse
import json
import re
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("val")
    ap.add_argument("metrics")
    ap.add_argument("--margin", type=float, required=True)
    ap.add_argument("--predictions")
    a = ap.parse_args()
    if a.predictions:
        records = [json.loads(line) for line in open(a.val, encoding="utf-8")]
        preds = [json.loads(line) for line in open(a.predictions, encoding="utf-8", errors="surrogateescape")]
        bad = 0
        for i, (r, p) in enumerate(zip(records, preds)):
            gold = r["answers"]["text"][0]
            ok = (p["record"] == i and p["answers"] == [gold] and p["start"] > 0
                  and p["end"] - p["start"] + 1 == len(gold.encode("utf-8"))
                  and 0 < p["pred_start"] <= p["pred_end"]
                  and len(p["prediction"].encode("utf-8", "surrogateescape")) == p["pred_end"] - p["pred_start"] + 1)
            bad += not ok
        ok = len(preds) == len(records) and bad == 0
        print(f"predictions: {len(preds)} lines, " + ("ok" if ok else f"FAILED ({bad} wrong lines)"))
        if not ok:
            sys.exit(1)
    n = first = first_long = 0
    for line in open(a.val, encoding="utf-8"):
        r = json.loads(line)
        words = re.findall(r"[A-Za-z]+", r["context"])
        gold = r["answers"]["text"][0]
        n += 1
        first += words[0] == gold
        first_long += next(w for w in words if len(w) >= 4) == gold
    base = max(first, first_long) / n
    m = json.load(open(a.metrics))["metrics"]
    em, f1 = m["exact_match"], m["f1"]
    print(f"{n} questions; first word {first / n:.4f}, first word of 4+ letters {first_long / n:.4f}; "
          f"model: exact match {em:.4f}, F1 {f1:.4f}")
    ok = em >= base + a.margin
    print("margin: " + ("ok" if ok else f"FAILED (needs +{a.margin} exact match over {base:.4f})"))
    sys.exit(0 if ok else 1)


main()

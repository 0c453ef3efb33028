"""Exact match of generated targets (test/E2E/seq2seq-train.test): RECORDS.jsonl
holds {"input", "target"} records, OUT.jsonl `lmrt sample --format json` of
their inputs (one prompt a line, in order); prints the share of completions
equal to their target and fails below --min-em.

Usage: check_seq2seq_em.py RECORDS.jsonl OUT.jsonl --min-em X
       check_seq2seq_em.py RECORDS.jsonl --prompts PROMPTS.txt --count N   (writes the first N inputs)
"""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("records")
ap.add_argument("out", nargs="?")
ap.add_argument("--min-em", type=float)
ap.add_argument("--prompts")
ap.add_argument("--count", type=int)
a = ap.parse_args()
records = [json.loads(line) for line in open(a.records, encoding="utf-8") if line.strip()]
if a.prompts:
    with open(a.prompts, "w", encoding="utf-8") as f:
        for r in records[:a.count]:
            f.write(r["input"] + "\n")
    print(f"wrote {min(a.count, len(records))} prompts")
    sys.exit(0)
got = [json.loads(line) for line in open(a.out, encoding="utf-8")]
hits = sum(g["completion"] == r["target"] and g["finish_reason"] == "eos" for g, r in zip(got, records))
em = hits / len(got)
for g, r in list(zip(got, records))[:3]:
    print(f"{g['prompt']!r} -> {g['completion']!r} (target {r['target']!r})")
ok = a.min_em is not None and em >= a.min_em
print(f"exact match: {hits} of {len(got)} = {em:.3f} (at least {a.min_em}) {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)

"""Turns every third SQuAD-shaped record (scripts/span_jsonl.py's) unanswerable, as
SQuAD v2.0's: no answer, and the question a word its context does not hold.
  squad_v2_jsonl.py IN.jsonl OUT.jsonl"""
import json, sys
out = open(sys.argv[2], "w")
for i, line in enumerate(open(sys.argv[1])):
    r = json.loads(line)
    if i % 3 == 0:
        r["question"] = "zzyzx"
        r["answers"] = {"text": [], "answer_start": []}
    out.write(json.dumps(r) + "\n")

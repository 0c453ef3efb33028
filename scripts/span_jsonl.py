#!/usr/bin/env python3
"""Writes a small extractive question-answering task as JSON Lines in SQuAD's
shape, built from Debian's fortunes (/usr/share/games/fortunes): the context is
the start of a fortune, the question a word of it, the answer that word's span
in the context. A model must find where the question's word is, which a
[CLS] question [SEP] context [SEP] encoder learns by matching tokens.

  scripts/span_jsonl.py -o runs/qa.jsonl
  lmrt data build --format jsonl --fields question,context,answers:span --input runs/qa.jsonl \\
      --val-fraction 0.2 --out runs/qa

A record is {"question": W, "context": C, "answers": {"text": [W],
"answer_start": [K]}} (K in characters, as SQuAD). C is the fortune with its
whitespace collapsed, cut to --context characters at a word boundary; W is one
of its words of 4 or more letters that occurs once in C, picked by a hash of C
(so not the first, last or longest one), up to --per-fortune words a fortune.
The output is a pure function of the files (no randomness). It also prints
the exact match of two trivial answers on every record: C's first word, and
C's first word of 4 or more letters.
"""
import argparse
import json
import os
import re
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fortunes_jsonl import fortune_files, fortunes  # noqa: E402

DEFAULT_FILES = "food,law,linux,perl,startrek"


def cut(text, n):
    """text cut to at most n characters, at a word boundary."""
    if len(text) <= n:
        return text
    head = text[:n + 1]
    return head[:head.rfind(" ")] if " " in head else text[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/usr/share/games/fortunes", help="where the fortune files are")
    ap.add_argument("--files", default=DEFAULT_FILES, help="comma-separated fortune files")
    ap.add_argument("--context", type=int, default=90, help="the most characters of a context")
    ap.add_argument("--per-fortune", type=int, default=2, help="the most questions a fortune gives")
    ap.add_argument("-o", "--out", required=True, help="the JSON Lines file to write")
    a = ap.parse_args()
    records, first_word, first_long = 0, 0, 0
    with open(a.out + ".tmp", "w", encoding="utf-8") as out:
        for _, path in fortune_files(a.dir, a.files):
            for doc in fortunes(path):
                context = cut(" ".join(doc.split()), a.context)
                words = [(m.group(), m.start()) for m in re.finditer(r"[A-Za-z]+", context)]
                counts = {}
                for w, _ in words:
                    counts[w] = counts.get(w, 0) + 1
                picks = [(w, at) for w, at in words if len(w) >= 4 and counts[w] == 1]
                if not picks:
                    continue
                h = zlib.crc32(context.encode("utf-8"))
                chosen = []
                for k in range(min(a.per_fortune, len(picks))):
                    i = (h + k * 7919) % len(picks)
                    while picks[i] in chosen:
                        i = (i + 1) % len(picks)
                    chosen.append(picks[i])
                for w, at in chosen:
                    assert context[at:at + len(w)] == w
                    out.write(json.dumps({"question": w, "context": context,
                                          "answers": {"text": [w], "answer_start": [at]}},
                                         ensure_ascii=False) + "\n")
                    records += 1
                    first_word += words[0][0] == w
                    first_long += picks[0][0] == w
    os.replace(a.out + ".tmp", a.out)
    print(f"wrote {a.out}: {records} questions")
    print(f"baselines (exact match): first word {first_word / records:.4f}, "
          f"first word of 4+ letters {first_long / records:.4f}")


if __name__ == "__main__":
    main()

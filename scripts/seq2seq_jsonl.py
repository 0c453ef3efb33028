#!/usr/bin/env python3
"""Writes a small sequence-to-sequence task as JSON Lines, built from Debian's
fortunes (/usr/share/games/fortunes): the input is a few words of a fortune,
the target the same words in reverse order. An encoder-decoder must read the
whole input before it writes the first word, and copy each word's letters in
their own order: what T5's cross-attention is for.

  scripts/seq2seq_jsonl.py -o runs/reverse.jsonl
  lmrt data build --format jsonl --fields input,target --input runs/reverse.jsonl \\
      --val-fraction 0.1 --out runs/reverse

A record is {"input": "the words of it", "target": "it of words the"}. The
words are the fortune's whitespace-separated words of ASCII letters only
(others are skipped), lower-cased, taken from its start: windows of --words
words (the last window of a fortune may be shorter, at least 2 words), up to
--per-fortune windows a fortune. With --task copy the target is the input
itself. The output is a pure function of the files (no randomness). It also
prints the token accuracy of the trivial answer "target = input" on the
records (the characters at which input and target agree), for scale.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fortunes_jsonl import fortune_files, fortunes  # noqa: E402

DEFAULT_FILES = "food,law,linux,perl,startrek"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/usr/share/games/fortunes", help="where the fortune files are")
    ap.add_argument("--files", default=DEFAULT_FILES, help="comma-separated fortune files")
    ap.add_argument("--words", type=int, default=4, help="words an input holds (at most)")
    ap.add_argument("--per-fortune", type=int, default=2, help="windows taken from a fortune (at most)")
    ap.add_argument("--task", choices=("reverse", "copy"), default="reverse")
    ap.add_argument("-o", "--out", required=True, help="the JSON Lines file to write")
    a = ap.parse_args()
    if a.words < 2 or a.per_fortune < 1:
        sys.exit(f"--words must be >= 2 and --per-fortune >= 1, got {a.words} and {a.per_fortune}")
    records = same = chars = 0
    with open(a.out + ".tmp", "w", encoding="utf-8") as out:
        for _, path in fortune_files(a.dir, a.files):
            for doc in fortunes(path):
                words = [w.lower() for w in doc.split() if w.isascii() and w.isalpha()]
                for k in range(a.per_fortune):
                    window = words[k * a.words:(k + 1) * a.words]
                    if len(window) < 2:
                        break
                    source = " ".join(window)
                    target = source if a.task == "copy" else " ".join(reversed(window))
                    out.write(json.dumps({"input": source, "target": target}) + "\n")
                    records += 1
                    same += sum(x == y for x, y in zip(source, target))
                    chars += len(target)
    os.replace(a.out + ".tmp", a.out)
    print(f"wrote {a.out}: {records} records ({a.task}, up to {a.words} words)")
    print(f"target = input: {same / max(chars, 1):.4f} of the target characters")


if __name__ == "__main__":
    main()

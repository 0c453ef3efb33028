#!/usr/bin/env python3
"""Writes a preference dataset for post-training (SFT, reward model, DPO) as JSON
Lines, built from Debian's fortunes (/usr/share/games/fortunes): per fortune, a
prompt (its first --prompt characters), the chosen response (its true
continuation, the next --response characters) and the rejected response (the
continuation at the same place of another fortune: the one half the list away).
So a model that has learnt the language prefers the continuation that fits.

  scripts/preferences_jsonl.py -o runs/prefs.jsonl                    # wisdom, people
  scripts/preferences_jsonl.py --files science --prompt 24 -o p.jsonl  # others

A record is {"prompt": P, "chosen": C, "rejected": R, "source": FILE}. Each
fortune's whitespace runs become one space (a newline is the end of a response
for models/post/, which read [SEP] as "\\n"); fortunes shorter than
prompt + response are left out, and so are pairs whose two responses are equal.
The output is a pure function of the files and the options (no randomness:
`lmrt data build --format jsonl` makes the held-out split). Then:

  lmrt data build --format jsonl --fields prompt,chosen,rejected --input runs/prefs.jsonl \\
      --val-fraction 0.1 --out runs/pref
"""
import argparse
import json
import os
import sys

from fortunes_jsonl import fortunes as fortune_file


def fortunes(path):
    """The fortunes of a file (fortunes_jsonl.py's split), whitespace collapsed, empty ones left out."""
    for doc in fortune_file(path):
        doc = " ".join(doc.split())
        if doc:
            yield doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/usr/share/games/fortunes", help="where the fortune files are")
    ap.add_argument("--files", default="wisdom,people", help="comma-separated fortune files")
    ap.add_argument("--prompt", type=int, default=32, help="characters of the prompt")
    ap.add_argument("--response", type=int, default=24, help="characters of each response")
    ap.add_argument("-o", "--out", required=True, help="the JSON Lines file to write")
    a = ap.parse_args()
    if a.prompt < 1 or a.response < 1:
        sys.exit("--prompt and --response must be at least 1")
    docs = []
    for name in [n for n in a.files.split(",") if n]:
        path = os.path.join(a.dir, name)
        if not os.path.isfile(path):
            sys.exit(f"{path}: no such fortune file")
        docs += [(name, d) for d in fortunes(path) if len(d) >= a.prompt + a.response]
    if len(docs) < 2:
        sys.exit(f"fewer than 2 fortunes of at least {a.prompt + a.response} characters in {a.files}")
    n, written = len(docs), 0
    with open(a.out, "w", encoding="utf-8") as out:
        for i, (name, d) in enumerate(docs):
            other = docs[(i + n // 2) % n][1]
            chosen = d[a.prompt:a.prompt + a.response]
            rejected = other[a.prompt:a.prompt + a.response]
            if chosen == rejected:
                continue
            out.write(json.dumps({"prompt": d[:a.prompt], "chosen": chosen, "rejected": rejected, "source": name},
                                 ensure_ascii=False) + "\n")
            written += 1
    print(f"wrote {a.out}: {written} records from {n} fortunes of {a.files}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the fortunes classification task as JSON Lines: one record per
fortune of Debian's fortunes packages (/usr/share/games/fortunes), labelled
by the file it comes from.

  scripts/fortunes_jsonl.py -o runs/fortunes5.jsonl            # the 5 default files
  scripts/fortunes_jsonl.py --files food,law,linux -o f3.jsonl  # others

A record is {"text": FORTUNE, "label": K, "source": FILE}, K the index of FILE
in --files. Fortunes are split on lines that are exactly "%" (as `lmrt data
build --format fortune` splits them), stripped of surrounding whitespace; empty
ones are left out. The output is a pure function of the files and their order
(no randomness: `lmrt data build --format jsonl` makes the held-out split).
Then:

  lmrt data build --format jsonl --fields text,label:label --input runs/fortunes5.jsonl \\
      --val-fraction 0.2 --out runs/fortunes5
"""
import argparse
import json
import os
import sys

DEFAULT_FILES = "food,law,linux,perl,startrek"


def fortunes(path):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        sys.exit(f"{path}: not UTF-8 text (byte {e.start})")
    doc = []
    for line in text.split("\n"):
        if line == "%":
            yield "\n".join(doc)
            doc = []
        else:
            doc.append(line)
    yield "\n".join(doc)


def fortune_files(directory, files):
    """(name, path) of each fortune file named in the comma-separated `files`,
    each checked to exist."""
    for name in [n for n in files.split(",") if n]:
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            sys.exit(f"{path}: no such fortune file (install fortunes and fortunes-min)")
        yield name, path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/usr/share/games/fortunes", help="where the fortune files are")
    ap.add_argument("--files", default=DEFAULT_FILES, help="comma-separated fortune files, one class each")
    ap.add_argument("-o", "--out", required=True, help="the JSON Lines file to write")
    a = ap.parse_args()
    names = [n for n in a.files.split(",") if n]
    if len(names) < 2 or len(set(names)) != len(names):
        sys.exit(f"--files needs two or more distinct files, got {a.files!r}")
    counts = []
    with open(a.out + ".tmp", "w", encoding="utf-8") as out:
        for label, (name, path) in enumerate(fortune_files(a.dir, ",".join(names))):
            n = 0
            for doc in fortunes(path):
                doc = doc.strip()
                if doc:
                    out.write(json.dumps({"text": doc, "label": label, "source": name}, ensure_ascii=False) + "\n")
                    n += 1
            counts.append(n)
    os.replace(a.out + ".tmp", a.out)
    total = sum(counts)
    print(f"wrote {a.out}: {total} fortunes, " + ", ".join(f"{k} {n} ({c})" for k, (n, c) in enumerate(zip(names, counts))))
    print(f"majority class: {names[counts.index(max(counts))]}, {max(counts) / total:.4f} of the records")


if __name__ == "__main__":
    main()

"""Checks the tokens transform's rows in a `lmrt run --dump-dir` of one epoch
against rows built here from the JSON Lines records: [CLS] the words joined by
spaces [SEP] [PAD]... cut at seq (256 = [PAD], 257 = [CLS], 258 = [SEP]),
labels = a word's tag on its first byte and -100 elsewhere; and that each
record appears `epochs` times.

  check_token_rows.py DUMP_DIR STEPS EPOCHS RECORDS.jsonl WORDS TAGS
"""
import json
import sys

from check_sft_rows import load

PAD, CLS, SEP = 256, 257, 258


def row(words, tags, seq):
    text, labels = [], []
    for i, (w, t) in enumerate(zip(words, tags)):
        if i:
            text.append(ord(" "))
            labels.append(-100)
        b = list(w.encode())
        text += b
        labels += [t] + [-100] * (len(b) - 1)
    n = min(len(text), seq - 2)
    ids = [CLS] + text[:n] + [SEP] + [PAD] * (seq - n - 2)
    lab = [-100] + labels[:n] + [-100] * (seq - n - 1)
    return ids, lab


def main():
    dump, steps, epochs, records, fw, ft = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:7]
    recs = [json.loads(l) for l in open(records, encoding="utf-8") if l.strip()]
    seen = []
    for s in range(1, steps + 1):
        t = load(f"{dump}/step{s}.safetensors")
        (B, T), ids = t["ids"]
        labels = t["labels"][1]
        for r in range(B):
            got = (ids[r * T:(r + 1) * T], labels[r * T:(r + 1) * T])
            match = [i for i, rec in enumerate(recs) if row(rec[fw], rec[ft], T) == got]
            if not match:
                sys.exit(f"step {s} row {r}: {got} is no record's row")
            seen.append(match[0])
    if sorted(seen) != sorted(list(range(len(recs))) * epochs):
        sys.exit(f"the run visited records {seen}, not each of the {len(recs)} {epochs} times")
    print(f"rows: ok ({len(seen)} rows, order {seen})")


if __name__ == "__main__":
    main()

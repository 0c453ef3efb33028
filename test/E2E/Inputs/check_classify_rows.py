"""Checks the classify transform's rows in a `lmrt run --dump-dir` of one
epoch against rows built here from the JSON Lines records: [CLS] a [SEP]
b [SEP] [PAD]... (256 = [PAD], 257 = [CLS], 258 = [SEP]), the pair cut
longest-first to fit seq, segments 0 then 1, the attention mask on real
tokens, the label, and `last` = row * seq + the last real position; and that
the epoch visits every record exactly once.

  check_classify_rows.py DUMP_DIR STEPS RECORDS.jsonl TEXT_A TEXT_B LABEL
"""
import json
import sys

from check_sft_rows import load

PAD, CLS, SEP = 256, 257, 258


def row(a, b, seq):
    a, b = list(a), list(b)
    room = seq - 3
    while len(a) + len(b) > room:
        (a if len(a) >= len(b) else b).pop()
    ids = [CLS] + a + [SEP] + b + [SEP]
    seg = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    n = len(ids)
    return ids + [PAD] * (seq - n), seg + [0] * (seq - n), [1.0] * n + [0.0] * (seq - n), n - 1

def main():
    dump, steps, records, fa, fb, fl = sys.argv[1], int(sys.argv[2]), sys.argv[3], *sys.argv[4:7]
    recs = [json.loads(l) for l in open(records, encoding="utf-8") if l.strip()]
    want = {}
    seen = []
    for s in range(1, steps + 1):
        t = load(f"{dump}/step{s}.safetensors")
        (B, T), ids = t["ids"]
        # A model reads the inputs it needs (GPT: ids, last, labels): check those.
        seg = t["segments"][1] if "segments" in t else None
        att = t["attention_mask"][1] if "attention_mask" in t else None
        lab = t["labels"][1]
        last = t["last"][1] if "last" in t else None
        for r in range(B):
            cut = slice(r * T, (r + 1) * T)
            got = (ids[cut], seg[cut] if seg else None, att[cut] if att else None, lab[r], last[r] if last else None)
            match = None
            for i, rec in enumerate(recs):
                i_ids, i_seg, i_att, i_last = row(rec[fa].encode(), rec[fb].encode(), T)
                if (i_ids, i_seg if seg else None, i_att if att else None, rec[fl],
                        r * T + i_last if last else None) == got:
                    match = i
            if match is None:
                sys.exit(f"step {s} row {r}: {got} is no record's row")
            seen.append(match)
    if sorted(seen) != list(range(len(recs))):
        sys.exit(f"the epoch visited records {seen}, not each of the {len(recs)} once")
    print(f"rows: ok ({len(seen)} rows, order {seen})")

main()

"""Checks the sft (or preference) transform's rows in a `lmrt run --dump-dir`
against rows built here from the JSON Lines records: prompt response [SEP]
[PAD]... cut at seq (256 = [PAD], 258 = [SEP]), labels[t] = the token at t + 1
where it is the response's or the final [SEP], else -100, and last = row *
seq + the final position; and that each record appears `epochs` times.

  check_sft_rows.py DUMP_DIR STEPS EPOCHS RECORDS.jsonl PROMPT RESPONSE [PREFIX]

PREFIX ("chosen_", "rejected_") reads the preference transform's rows.
"""
import json
import sys

import safetensors_np

PAD, SEP = 256, 258


def load(path):
    """A safetensors dump as {name: (shape, flat list)}."""
    return {k: (list(v.shape), v.ravel().tolist()) for k, v in safetensors_np.load(path).items()}


def row(prompt, response, seq):
    toks = list(prompt) + list(response) + [SEP]
    n = min(len(toks), seq)
    ids = toks[:n] + [PAD] * (seq - n)
    labels = [toks[t + 1] if t + 1 < n and t + 1 >= len(prompt) else -100 for t in range(n)] + [-100] * (seq - n)
    return ids, labels, n - 1


def main():
    dump, steps, epochs, records, fp, fr = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:7]
    prefix = sys.argv[7] if len(sys.argv) > 7 else ""
    recs = [json.loads(l) for l in open(records, encoding="utf-8") if l.strip()]
    seen = []
    for s in range(1, steps + 1):
        t = load(f"{dump}/step{s}.safetensors")
        (B, T), ids = t[prefix + "ids"]
        # A model reads the outputs it needs (a reward model: ids and last).
        labels = t[prefix + "labels"][1] if prefix + "labels" in t else None
        last = t[prefix + "last"][1] if prefix + "last" in t else None
        for r in range(B):
            cut = slice(r * T, (r + 1) * T)
            got = (ids[cut], labels[cut] if labels else None, last[r] if last else None)
            match = [i for i, rec in enumerate(recs)
                     if (lambda w: (w[0], w[1] if labels else None, r * T + w[2] if last else None))(
                         row(rec[fp].encode(), rec[fr].encode(), T)) == got]
            if not match:
                sys.exit(f"step {s} row {r}: {got} is no record's row")
            seen.append(match[0])
    want = sorted(list(range(len(recs))) * epochs)
    if sorted(seen) != want:
        sys.exit(f"the run visited records {seen}, not each of the {len(recs)} {epochs} times")
    print(f"rows: ok ({len(seen)} rows, order {seen})")


if __name__ == "__main__":
    main()

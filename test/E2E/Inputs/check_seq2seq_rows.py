"""Checks the seq2seq transform's rows in a `lmrt run --dump-dir` against rows
built here from the JSON Lines records, as HF's T5 fine-tuning makes them
(run_summarization.py: tokenizer(input, max_length=seq, truncation=True) keeps
seq - 1 tokens and appends EOS 1, padding 0; the labels likewise with -100 on
padding; decoder_input_ids = _shift_right(labels): the start id 0, then the
labels but the last, -100 replaced by the pad 0), and that each record
appears `epochs` times.

  check_seq2seq_rows.py DUMP_DIR STEPS EPOCHS RECORDS.jsonl
"""
import json
import sys

import safetensors_np

PAD, EOS, IGNORE = 0, 1, -100


def rows(source, target, seq, tseq):
    ids = list(source[:seq - 1]) + [EOS]
    mask = [1.0] * len(ids) + [0.0] * (seq - len(ids))
    ids += [PAD] * (seq - len(ids))
    labels = list(target[:tseq - 1]) + [EOS]
    labels += [IGNORE] * (tseq - len(labels))
    decoder = [PAD] + [PAD if t == IGNORE else t for t in labels[:-1]]
    return ids, mask, decoder, labels


def main():
    dump, steps, epochs, records = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    recs = [json.loads(line) for line in open(records, encoding="utf-8") if line.strip()]
    seen = []
    for s in range(1, steps + 1):
        t = {k: v.tolist() for k, v in safetensors_np.load(f"{dump}/step{s}.safetensors").items()}
        batch, seq, tseq = len(t["ids"]), len(t["ids"][0]), len(t["labels"][0])
        for r in range(batch):
            got = (t["ids"][r], t["attention_mask"][r], t["decoder_ids"][r], t["labels"][r])
            match = [i for i, rec in enumerate(recs)
                     if rows(rec["input"].encode(), rec["target"].encode(), seq, tseq) == got]
            if not match:
                sys.exit(f"step {s} row {r}: {got} is no record's row")
            seen.append(match[0])
    want = sorted(list(range(len(recs))) * epochs)
    if sorted(seen) != want:
        sys.exit(f"the run visited records {sorted(seen)}, not each of the {len(recs)} {epochs} times")
    print(f"rows: ok ({len(seen)} rows, seq {seq}, target_seq {tseq})")


if __name__ == "__main__":
    main()

"""Checks the span transform's doc stride and `lmrt eval --predictions`'
merging of windows against a Python port of Hugging Face's run_qa.py on the
same validation records (byte tokens, as the transform's):

- prepare_validation_features: tokenizer(question, context,
  truncation="only_second", max_length=seq, stride=doc_stride,
  return_overflowing_tokens=True): the question cut to max_question, windows
  of the context of `room` tokens, each starting room - stride after the one
  before, until one reaches the context's end; and the training labels of
  each window (the answer's row positions when wholly inside, else 0 both);
- postprocess_qa_predictions (n_best_size 20, max_answer_length 30): for each
  window the 20 largest start and end logits, pairs inside the context with
  start <= end and at most 30 tokens, the best start + end logit over all the
  record's windows; with --v2 (version_2_with_negative) the answer is "" when
  the least [CLS] start + end logit over the windows exceeds that best by more
  than null_score_diff_threshold (--threshold, 0 as HF's default).

The windows' logits come from the plan's forward program (lmrt forward
--inputs) on the rows built here, so the rows, the labels of the winning
window and the merged answer are all compared with lmrt's.

  doc_stride_reference.py --jsonl VAL.jsonl --plan P --weights W --predictions PRED.jsonl
                          --seq 48 --max-question 8 --stride 16
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from array import array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from packing_parity import load, save  # noqa: E402  (plain-Python safetensors)

PAD, CLS, SEP = 256, 257, 258


def features(rec, seq, max_question, stride):
    """[(ids, segments, mask, start, end, window context [lo, hi) in the context's tokens,
    row position of the context)] of one record."""
    q = list(rec["question"].encode())
    q = q[:min(len(q), max_question, seq - 4)]
    ctx = list(rec["context"].encode())
    ans = rec["answers"]
    if ans["text"]:
        first = len(rec["context"][:ans["answer_start"][0]].encode())
        last = first + len(ans["text"][0].encode()) - 1
    else:  # SQuAD v2's unanswerable question: every window points at [CLS]
        first = last = -1
    room = seq - len(q) - 3
    out, lo = [], 0
    while True:
        hi = min(lo + room, len(ctx))
        ids = [CLS] + q + [SEP] + ctx[lo:hi] + [SEP]
        seg = [0] * (len(q) + 2) + [1] * (hi - lo + 1)
        n = len(ids)
        c0 = len(q) + 2
        inside = first >= lo and last < hi and first >= 0
        out.append((ids + [PAD] * (seq - n), seg + [0] * (seq - n), [1.0] * n + [0.0] * (seq - n),
                    c0 + first - lo if inside else 0, c0 + last - lo if inside else 0, lo, hi, c0))
        if hi >= len(ctx):
            return out
        lo += room - stride


def top(xs, n):
    """np.argsort(xs)[-1:-n-1:-1]: the n largest, largest first (ties: the later index first)."""
    order = sorted(range(len(xs)), key=lambda i: (xs[i], i))
    return order[::-1][:n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--predictions", required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--max-question", type=int, required=True)
    ap.add_argument("--stride", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True, help="the plan's batch")
    ap.add_argument("--lmrt", default="lmrt")
    ap.add_argument("--v2", action="store_true")
    ap.add_argument("--threshold", type=float, default=0.0, help="null_score_diff_threshold (--v2)")
    a = ap.parse_args()
    records = [json.loads(line) for line in open(a.jsonl) if line.strip()]
    feats = [(i, w, f) for i, r in enumerate(records)
             for w, f in enumerate(features(r, a.seq, a.max_question, a.stride))]
    many = sum(1 for i in range(len(records)) if sum(1 for f in feats if f[0] == i) > 1)
    print(f"reference: {len(records)} records in {len(feats)} windows, {many} records with several")

    # The windows' logits from the plan's forward program, a batch at a time.
    logits = []
    with tempfile.TemporaryDirectory() as tmp:
        for b in range(0, len(feats), a.batch):
            chunk = [f for _, _, f in feats[b:b + a.batch]]
            chunk += [chunk[0]] * (a.batch - len(chunk))
            ids = array("i", [t for f in chunk for t in f[0]])
            seg = array("i", [t for f in chunk for t in f[1]])
            mask = array("f", [t for f in chunk for t in f[2]])
            shape = [a.batch, a.seq]
            save(os.path.join(tmp, "in.safetensors"),
                 {"ids": (shape, ids), "segments": (shape, seg), "attention_mask": (shape, mask)})
            out = os.path.join(tmp, "out.safetensors")
            r = subprocess.run([a.lmrt, "forward", a.plan, "--weights", a.weights, "--inputs",
                                os.path.join(tmp, "in.safetensors"), "--out", out, "--overwrite"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(r.stdout + r.stderr)
            (y,) = load(out).values()
            for k in range(min(a.batch, len(feats) - b)):
                row = y[1][k * a.seq * 2:(k + 1) * a.seq * 2]
                logits.append((list(row[0::2]), list(row[1::2])))

    # postprocess_qa_predictions, then lmrt's lines.
    best, null = {}, {}
    for (i, w, f), (sl, el) in zip(feats, logits):
        lo, hi, c0 = f[5], f[6], f[7]
        null[i] = min(null.get(i, float("inf")), sl[0] + el[0])
        for s in top(sl, 20):
            for e in top(el, 20):
                if not (c0 <= s < c0 + hi - lo and c0 <= e < c0 + hi - lo) or e < s or e - s + 1 > 30:
                    continue
                score = sl[s] + el[e]
                if i not in best or score > best[i][0]:
                    best[i] = (score, w, f, s, e)
    lines = [json.loads(line) for line in open(a.predictions)]
    same_text = same_window = same_gold = same_diff = no_answer = 0
    for line in lines:
        i = line["record"]
        score, w, f, s, e = best.get(i, (float("-inf"), 0, feats[0][2], -1, -1))
        ctx = records[i]["context"].encode()
        text = ctx[f[5] + s - f[7]:f[5] + e - f[7] + 1].decode("utf-8", "replace") if s >= 0 else ""
        if a.v2:
            diff = null[i] - score
            same_diff += abs(line["null_score_diff"] - diff) <= 1e-4 * max(1.0, abs(diff))
            if diff > a.threshold:
                text, s, e = "", 0, 0
                no_answer += 1
        same_text += line["prediction"] == text
        same_window += line["window"] == w and line["pred_start"] == s and line["pred_end"] == e
        same_gold += line["start"] == f[3] and line["end"] == f[4]
    n = len(records)
    ok = len(lines) == n and same_text == n and same_window == n and same_gold == n and (not a.v2 or same_diff == n)
    print(f"predictions: {len(lines)} lines; the reference's answer text {same_text}, window and positions "
          f"{same_window}, the window's gold positions {same_gold} of {n}")
    if a.v2:
        print(f"v2: null score differences {same_diff} of {n}; {no_answer} answered 'no answer'")
    print("doc stride reference: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

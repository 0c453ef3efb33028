"""Checks that a packed batch (a transform with pack = true) trains exactly as
the padded one: one step of a padded plan over all the records of a small
example dataset (batch = the record count) against one step of the packed
plan over the same records (batch = the packed rows of epoch 0), from the same
initial weights, in f64 (lmc compile --float-type=f64), so the two differ only
by the order of their sums:

- the loss and every gradient agree to --rtol;
- each example's loss, from the forward program's logits (lmrt forward
  --inputs), agrees with its padded row's (examples matched by their tokens);
- examples never attend across documents: changing every token of one
  example of a packed row leaves the other examples' outputs as they were,
  and changes its own.

Tensors are read and written with safetensors_np.py, kept flat.

  packing_parity.py --task TASK --padded P.plan --packed Q.plan --data DIR
  packing_parity.py --task TASK --records FILE.jsonl   (writes the test's records)

TASK is the transform: classify (pooled at [CLS] by cls_index, or at the last
token by last_index: whichever the packed plan reads), regression (one number
an example at [CLS]), tokens (a label a word), sft (causal, the responses),
reward and dpo (the preference transform: the chosen and the rejected side
each checked as a batch; a reward a pair's example at its last token, the
log-probs of its response tokens), seq2seq (T5: an example is its input in
the encoder's row and its target in the decoder's, the same slot k of both),
span (an example is a question and its context, or with doc_stride a window
of it; its loss the mean of its start's and its end's cross-entropy over its
own positions: the padded plan is bert_span.lm with mask_padding = 1).
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
from array import array

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402


def load(path):
    """{name: (shape, flat values)}: the sums below read tensors flat."""
    return {n: (list(t.shape), t.ravel()) for n, t in safetensors_np.load(path).items()}


def save(path, tensors):
    """Writes {name: (shape, flat values)}, the values' dtype kept."""
    safetensors_np.save(path, {n: np.asarray(v).reshape(shape) for n, (shape, v) in tensors.items()})


def rel(a, b):
    num = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    return num / max(math.sqrt(sum(y * y for y in b)), 1e-300)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout + r.stderr


def forward(lmrt, plan, weights, inputs, tmp):
    w, i, o = (os.path.join(tmp, n + ".safetensors") for n in ("fw", "fin", "fout"))
    save(w, weights)
    save(i, inputs)
    run([lmrt, "forward", plan, "--weights", w, "--inputs", i, "--out", o, "--overwrite"])
    (out,) = load(o).values()
    return out


def log_softmax_at(logits, label):
    m = max(logits)
    return logits[label] - m - math.log(sum(math.exp(x - m) for x in logits))


class Examples:
    """The examples of a batch: key (their tokens) -> [(row, start, length)]."""

    def __init__(self, batch, seq, packed, pad=256):
        shape, ids = batch["ids"]
        self.rows, self.seq = shape
        self.spans = []  # (row, start, length); pad: [PAD] (256, T5's 0), which no example has
        for r in range(self.rows):
            row = ids[r * seq:(r + 1) * seq]
            if packed:
                doc = batch["doc_ids"][1][r * seq:(r + 1) * seq]
                start = 0
                for t in range(1, seq + 1):
                    if t == seq or doc[t] != doc[start]:
                        # The padding (the row's last document) is no example.
                        if any(x != pad for x in row[start:t]):
                            self.spans.append((r, start, t - start))
                        start = t
            else:
                self.spans.append((r, 0, sum(1 for x in row if x != pad)))
        self.ids = ids

    def key(self, span):
        r, start, n = span
        return tuple(self.ids[r * self.seq + start:r * self.seq + start + n])


WORDS = ("the of and to in is was that for on with as by at from his an be this which or are had not but "
         "have they were one all their been has").split()


def write_records(task, path, count=24):
    """`count` records of 1 to 11 words (a number among them keeps each unique):
    classify {text, label} with 3 labels, regression {text, score}, tokens
    {tokens (words), ner_tags} with 3 tags, sft {prompt, response}, reward and
    dpo {prompt, chosen, rejected}."""
    def text(i, n):
        w = [WORDS[(i * 3 + j * 5) % len(WORDS)] for j in range(n)]
        w.insert(i % (n + 1), str(i))
        return " ".join(w)
    with open(path, "w") as f:
        for i in range(count):
            n = 1 + (i * 7) % 11
            if task == "classify":
                r = {"text": text(i, n), "label": i % 3}
            elif task == "regression":
                r = {"text": text(i, n), "score": round(0.37 * ((i * 5) % 11) - 1.5, 2)}
            elif task == "tokens":
                words = text(i, n).split()
                r = {"tokens": words, "ner_tags": [(i + j * j) % 3 for j in range(len(words))]}
            elif task == "seq2seq":
                r = {"input": text(i, n), "target": text(i + 5, 1 + (i * 5) % 7)}
            elif task == "span":
                # A question of 2 or 3 words, a context of 2 to 6 words, every
                # sixth of 16 to 18 (longer than a row of 64 holds after the
                # question: cut off, or with doc_stride two windows), the
                # answer a word of it.
                context = text(i + 3, 16 + i % 3 if i % 6 == 0 else 2 + (i * 3) % 5)
                words = context.split()
                w = (i * 5) % len(words)
                start = len(" ".join(words[:w])) + (1 if w else 0)
                r = {"question": text(i, 1 + i % 2) + "?", "context": context,
                     "answers": {"text": [words[w]], "answer_start": [start]}}
            elif task == "sft":
                r = {"prompt": text(i, 1 + n // 2) + "?", "response": text(i + 5, 1 + (i * 5) % 7)}
            else:
                r = {"prompt": text(i, 1 + n // 2) + "?", "chosen": text(i + 5, 1 + (i * 5) % 7),
                     "rejected": text(i + 11, 1 + (i * 3) % 5)}
            f.write(json.dumps(r) + "\n")


def side_checks(a, check, pad, pack, pe, qe, seq, weights, inputs_of, tmp, side):
    """Per-example checks of one side of the batches (all of them but for
    preference): each example's loss (or reward) from the forward program's
    output agrees with its padded row's, and changing one example of a packed
    row moves no other example's outputs."""
    pooled = a.task in ("classify", "regression", "reward")
    pin, qin = inputs_of(pad, a.padded), inputs_of(pack, a.packed)
    plog, qlog = forward(a.lmrt, a.padded, weights, pin, tmp), forward(a.lmrt, a.packed, weights, qin, tmp)

    # Pooled tasks: the slot of each packed example, found from the index the
    # plan reads (its [CLS] or its last token) at the slots that score.
    start_slot = {}
    if pooled:
        by_cls = "cls_index" in pack
        index = pack["cls_index" if by_cls else "last_index"][1]
        start_of_end = {(r, st + n - 1): st for r, st, n in qe.spans}
        for r in range(qe.rows):
            for k in range(seq):
                scores = pack["example_labels"][1][r * seq + k] != -100 if a.task == "classify" \
                    else pack["example_mask"][1][r * seq + k] != 0
                if scores:
                    at = index[r * seq + k] - r * seq
                    start_slot[(r, at if by_cls else start_of_end[(r, at)])] = k

    def losses(ex, batch, logits, packed):
        """key -> the example's loss (classify: its label's; regression: its squared error; reward: its reward;
        tokens, sft, dpo: summed over its labelled tokens)."""
        shape, flat = logits
        c = shape[-1]
        out = {}
        for span in ex.spans:
            r, start, n = span
            if a.task in ("regression", "reward"):
                if packed:
                    slot = start_slot[(r, start)]
                    pred = flat[r * seq + slot]
                    target = batch["example_targets"][1][r * seq + slot] if a.task == "regression" else 0.0
                else:
                    pred, target = flat[r], batch["targets"][1][r] if a.task == "regression" else 0.0
                out[ex.key(span)] = (pred - target) ** 2 if a.task == "regression" else pred
            elif a.task == "seq2seq":
                # The example's target tokens: its decoder row (padded), or
                # the decoder tokens of its slot (packed).
                tseq = batch["labels"][0][1]
                k = batch["doc_ids"][1][r * seq + start] if packed else None
                total = 0.0
                for t in range(tseq):
                    label = batch["labels"][1][r * tseq + t]
                    if label != -100 and (not packed or batch["decoder_doc_ids"][1][r * tseq + t] == k):
                        total -= log_softmax_at(flat[(r * tseq + t) * c:(r * tseq + t + 1) * c], label)
                out[ex.key(span)] = total
            elif a.task == "span":
                # The mean of the start's and the end's cross-entropy over the
                # example's own positions (the padded row's real tokens).
                row = flat[(r * seq + start) * 2:(r * seq + start + n) * 2]
                if packed:
                    k = batch["doc_ids"][1][r * seq + start]
                    gold = [batch["example_" + w + "_positions"][1][r * seq + k] - start for w in ("start", "end")]
                else:
                    gold = [batch[w + "_positions"][1][r] for w in ("start", "end")]
                out[ex.key(span)] = -0.5 * (log_softmax_at(row[0::2], gold[0]) + log_softmax_at(row[1::2], gold[1]))
            elif a.task == "classify":
                if packed:
                    slot = start_slot[(r, start)]
                    row = flat[(r * seq + slot) * c:(r * seq + slot + 1) * c]
                    label = batch["example_labels"][1][r * seq + slot]
                else:
                    row = flat[r * c:(r + 1) * c]
                    label = batch["labels"][1][r]
                out[ex.key(span)] = -log_softmax_at(row, label)
            else:
                total = 0.0
                for t in range(start, start + n):
                    label = batch["labels"][1][r * seq + t]
                    if label != -100:
                        total -= log_softmax_at(flat[(r * seq + t) * c:(r * seq + t + 1) * c],
                                                10 if a.task in ("sft", "dpo") and label >= 256 else label)
                out[ex.key(span)] = total
        return out

    what = "rewards" if a.task == "reward" else "losses"
    pl, ql = losses(pe, pad, plog, False), losses(qe, pack, qlog, True)
    worst = max(abs(pl[k] - ql[k]) / max(abs(pl[k]), 1e-300) for k in pl)
    check(worst <= a.rtol, f"{side}per-example {what}: {len(pl)}, max rel err {worst:.1e}")

    # Change every token of one example of a row holding several: the others'
    # outputs stay, its own move.
    r = next(r for r in range(qe.rows) if sum(1 for s in qe.spans if s[0] == r) >= 2)
    victim = next(s for s in qe.spans if s[0] == r)
    ids = array("i", qin["ids"][1])
    for t in range(victim[1] + 1, victim[1] + victim[2] - 1):
        ids[r * seq + t] = (ids[r * seq + t] + 7) % 256
    changed = dict(qin, ids=(qin["ids"][0], ids))
    q2 = forward(a.lmrt, a.packed, weights, changed, tmp)
    c = 1 if a.task in ("regression", "reward") else qlog[0][-1]

    def cells(span):
        rr, start, n = span
        if a.task == "seq2seq":  # the logits of the example's decoder tokens
            tseq, k = pack["labels"][0][1], pack["doc_ids"][1][rr * seq + start]
            return [i for t in range(tseq) if pack["decoder_doc_ids"][1][rr * tseq + t] == k
                    for i in range((rr * tseq + t) * c, (rr * tseq + t + 1) * c)]
        if pooled:
            slot = start_slot[(rr, start)]
            return range((rr * seq + slot) * c, (rr * seq + slot + 1) * c)
        return range((rr * seq + start) * c, (rr * seq + start + n) * c)

    others = [i for s in qe.spans if s != victim for i in cells(s)]
    own = list(cells(victim))
    same = max(abs(qlog[1][i] - q2[1][i]) for i in others)
    moved = max(abs(qlog[1][i] - q2[1][i]) for i in own)
    check(same == 0.0 and moved > 0.0,
          f"{side}row {r}: example at {victim[1]} changed: the other {len(qe.spans) - 1} examples' logits move by "
          f"{same:.1e}, its own by {moved:.1e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", choices=["classify", "regression", "tokens", "sft", "reward", "dpo", "seq2seq", "span"],
                    required=True)
    ap.add_argument("--records")
    ap.add_argument("--padded")
    ap.add_argument("--packed")
    ap.add_argument("--data")
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--lmrt", default="lmrt")
    a = ap.parse_args()
    if a.records:
        write_records(a.task, a.records)
        return 0
    failures = 0

    def check(ok, line):
        nonlocal failures
        print(line + (" ok" if ok else " FAILED"))
        failures += 0 if ok else 1

    with tempfile.TemporaryDirectory() as tmp:
        pad_dir, pack_dir = os.path.join(tmp, "pad"), os.path.join(tmp, "pack")
        common = ["--data", a.data, "--steps", "1", "--seed", "3", "--eval-batches", "0"]
        run([a.lmrt, "run", a.padded] + common + ["--dump-dir", pad_dir, "--out", os.path.join(tmp, "p.safetensors")])
        init = os.path.join(pad_dir, "init.safetensors")
        log = run([a.lmrt, "run", a.packed] + common + ["--init", init, "--dump-dir", pack_dir,
                                                         "--out", os.path.join(tmp, "q.safetensors")])
        for line in log.splitlines():
            if line.startswith("packing:"):
                print(line)
        pad, pack = load(os.path.join(pad_dir, "step1.safetensors")), load(os.path.join(pack_dir, "step1.safetensors"))
        weights = load(init)

        # preference plans read two sides, chosen_* and rejected_*: each is
        # checked as a batch of its own (a view with the prefix dropped).
        sides = ["chosen_", "rejected_"] if a.task in ("reward", "dpo") else [""]

        def view(batch, side):
            return {n[len(side):] if n.startswith(side) else n: v for n, v in batch.items()}

        # The same examples, each once, in both batches.
        seq = pad[sides[0] + "ids"][0][1]
        ex = {}
        for side in sides:
            pv, qv = view(pad, side), view(pack, side)
            pad_id = 0 if a.task == "seq2seq" else 256
            pe, qe = Examples(pv, seq, False, pad_id), Examples(qv, seq, True, pad_id)
            ex[side] = pe, qe
            pkeys, qkeys = sorted(pe.key(s) for s in pe.spans), sorted(qe.key(s) for s in qe.spans)
            check(pkeys == qkeys and len(set(pkeys)) == len(pkeys),
                  f"{side}examples: {len(pe.spans)} in {pe.rows} padded rows, {len(qe.spans)} in "
                  f"{qe.rows} packed rows, the same tokens")

        e = abs(pad["loss"][1][0] - pack["loss"][1][0]) / abs(pad["loss"][1][0])
        check(e <= a.rtol, f"loss {pad['loss'][1][0]:.12f} padded, {pack['loss'][1][0]:.12f} packed, rel {e:.1e}")
        grads = [n for n in pad if n.startswith("grad.")]
        check(sorted(grads) == sorted(n for n in pack if n.startswith("grad.")), f"{len(grads)} gradients")
        # The attention's key biases have no gradient in exact arithmetic (a
        # constant a query adds to all its scores): both sides' rounding noise.
        norm = {n: math.sqrt(sum(x * x for x in pad[n][1])) for n in grads}
        floor = 1e-7 * max(norm.values())
        zero = [n for n in grads if norm[n] < floor]
        worst = max(rel(pack[n][1], pad[n][1]) for n in grads if n not in zero)
        check(worst <= a.rtol, f"{len(grads) - len(zero)} gradients, max rel err {worst:.1e}")
        noise = max([math.sqrt(sum(x * x for x in pack[n][1])) for n in zero] + [0.0])
        check(noise < floor, f"{len(zero)} gradients zero in exact arithmetic, packed norm {noise:.1e}")

        forward_line = {}

        def inputs_of(batch, plan):
            """The forward program's inputs, taken from the batch by name."""
            if plan not in forward_line:
                names = run([a.lmrt, "inspect", plan])
                forward_line[plan] = next(l for l in names.splitlines() if l.strip().startswith("forward"))
            fw = forward_line[plan]
            return {n: batch[n] for n in batch if f" {n} i32" in fw or f" {n} f" in fw}

        for side in sides:
            side_checks(a, check, view(pad, side), view(pack, side), *ex[side], seq, weights, inputs_of, tmp, side)
    print("packing parity: " + ("ok" if failures == 0 else f"{failures} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

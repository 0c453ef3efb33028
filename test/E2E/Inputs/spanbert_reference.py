"""Compares `lmrt run --dump-dir` of models/spanbert.lm with a PyTorch SpanBERT written
here (Hugging Face has no SpanBERT pretraining class) on the same weights and batches.

The reference is BERT's post-LN encoder (as HF's BertModel: word + position + token
type 0 embeddings, layer norm, self-attention with the additive padding bias, GELU
feed-forward), the masked-LM head (dense, GELU, layer norm, decoder tied to the word
embeddings plus a bias) and the span boundary objective of Joshi et al. (2020):
for a masked token x_i of span [s, e],

    h0 = [x_{s-1}; x_{e+1}; p_{i-s+1}]
    h1 = LayerNorm(GeLU(W1 h0 + b1)),  y_i = LayerNorm(GeLU(W2 h1 + b2))

predicted through the tied decoder with the SBO's own bias; the loss is the mean
cross-entropy over the masked tokens of MLM plus that of SBO. Parameters are
PyTorch tensors under LMC's own names (a Linear is stored [in, out], as LMC's).

The reference does not read the transform's span_left / span_right / span_pos: it
finds the spans itself as the runs of masked positions (labels != -100; the span_mlm
transform never lets two spans touch), derives the boundary positions and offsets,
checks that the dump's indices agree and feeds its own to the SBO. LMC's loss must
match to relative 1e-5 and every parameter's gradient to relative 1e-4 (of its norm,
or of 1e-6 of the largest gradient's norm where smaller: the key biases' gradient is
zero in exact arithmetic), in fp32, for each dumped step; each step starts from LMC's
weights before it. With --plan, each step also runs the model's forward program
(`lmrt forward --inputs` on the dumped ids, attention_mask and span indices with
that step's weights) and compares its MLM and SBO logits [B, T, vocab], every
position, with the reference's to relative 1e-4.

Usage: spanbert_reference.py --dump DIR --heads H [--eps E] [--plan PLAN]
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402
from parity_common import Checks, check_grads, compare_logits, grad_floor, lmrt_forward, rel, step_weights, steps  # noqa: E402


def gelu(x):
    return F.gelu(x, approximate="tanh")  # the tanh form, as LMC's gelu


def spans_from_labels(labels):
    """Each masked position's span boundaries [B, T] (flat rows b * T + s - 1 and
    b * T + e + 1) and offset i - s; unmasked positions get their own row and 0."""
    b, t = labels.shape
    left = np.arange(b * t, dtype=np.int64).reshape(b, t)
    right, pos = left.copy(), np.zeros((b, t), np.int64)
    lengths = []
    for r in range(b):
        i = 0
        while i < t:
            if labels[r, i] == -100:
                i += 1
                continue
            s = i
            while i < t and labels[r, i] != -100:
                i += 1
            e = i - 1
            lengths.append(e - s + 1)
            left[r, s:e + 1] = r * t + s - 1
            right[r, s:e + 1] = r * t + e + 1
            pos[r, s:e + 1] = np.arange(e - s + 1)
    return left, right, pos, lengths


def forward(p, batch, heads, eps, layers):
    ids, labels, mask = batch["ids"], batch["labels"], batch["attention_mask"]
    B, T = ids.shape
    d = p["spanbert.word"].shape[1]
    hd = d // heads
    x = p["spanbert.word"][ids] + p["spanbert.position"][:T] + p["spanbert.segment"][0]
    ln = lambda v, n: F.layer_norm(v, (d,), p[n + ".gamma"], p[n + ".beta"], eps)  # noqa: E731
    dense = lambda v, n: v @ p[n + ".w"] + p[n + ".b"]  # noqa: E731
    x = ln(x, "spanbert.embed_ln")
    bias = ((mask - 1.0) * 1e9).reshape(B, 1, 1, T)
    for k in range(layers):
        L = f"spanbert.layer.{k}."
        split = lambda v: v.reshape(B, T, heads, hd).permute(0, 2, 1, 3)  # noqa: E731
        q, kk, v = (split(dense(x, L + "attention." + n)) for n in ("query", "key", "value"))
        a = torch.softmax(q @ kk.transpose(-1, -2) * (1.0 / math.sqrt(hd)) + bias, dim=-1)
        y = (a @ v).permute(0, 2, 1, 3).reshape(B, T, d)
        x = ln(x + dense(y, L + "attention.output"), L + "attention_ln")
        h = dense(gelu(dense(x, L + "intermediate")), L + "output")
        x = ln(x + h, L + "output_ln")
    word = p["spanbert.word"]
    # Masked LM.
    t = ln(gelu(dense(x, "mlm.transform")), "mlm.ln")
    mlm_logits = t @ word.T + p["mlm.bias"]
    mlm = F.cross_entropy(mlm_logits.reshape(B * T, -1), labels.reshape(-1), ignore_index=-100)
    # Span boundary objective, from the boundaries found in the labels.
    rows = x.reshape(B * T, d)
    h0 = torch.cat([rows[batch["left"]], rows[batch["right"]], p["sbo.position"][batch["pos"]]], dim=-1)
    h1 = ln(gelu(dense(h0, "sbo.mlp1")), "sbo.ln1")
    y = ln(gelu(dense(h1, "sbo.mlp2")), "sbo.ln2")
    sbo_logits = y @ word.T + p["sbo.bias"]
    sbo = F.cross_entropy(sbo_logits.reshape(B * T, -1), labels.reshape(-1), ignore_index=-100)
    return mlm + sbo, mlm, sbo, {"mlm_logits": mlm_logits, "sbo_logits": sbo_logits}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--eps", type=float, default=1e-12)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--logits-rtol", type=float, default=1e-4)
    ap.add_argument("--plan", help="the plan that wrote the dump: compare its forward program's logits too")
    a = ap.parse_args()
    print(f"torch {torch.__version__}")
    torch.set_num_threads(2)

    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    layers = 1 + max(int(n.split(".")[2]) for n in init if n.startswith("spanbert.layer."))
    print(f"{len(init)} parameters; {sum(v.size for v in init.values()):,} numbers, {layers} layers")
    checks = Checks()
    weights = init
    for k, dump in steps(a.dump):
        if dump["ids"].dtype != np.int32:
            sys.exit("expected an f32 dump with i32 ids")
        labels = dump["labels"].astype(np.int64)
        left, right, pos, lengths = spans_from_labels(labels)
        same = (np.array_equal(left, dump["span_left"]) and np.array_equal(right, dump["span_right"])
                and np.array_equal(pos, dump["span_pos"]))
        checks.failures += not same
        print(f"step {k}: {len(lengths)} spans, {int((labels != -100).sum())} masked, longest "
              f"{max(lengths)}; span_left/right/pos {'agree' if same else 'DISAGREE'} with the labels")
        p = {n: torch.tensor(np.ascontiguousarray(w), dtype=torch.float32, requires_grad=True)
             for n, w in weights.items()}
        batch = {"ids": torch.from_numpy(dump["ids"].astype(np.int64)), "labels": torch.from_numpy(labels),
                 "attention_mask": torch.from_numpy(dump["attention_mask"].astype(np.float32)),
                 "left": torch.from_numpy(left), "right": torch.from_numpy(right),
                 "pos": torch.from_numpy(pos)}
        loss, mlm, sbo, logits = forward(p, batch, a.heads, a.eps, layers)
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: loss lmc {float(dump['loss']):.8f} torch {loss.item():.8f} "
                     f"(mlm {mlm.item():.4f} + sbo {sbo.item():.4f}) rel {e:.2e}")
        check_grads(checks, k, {n: dump["grad." + n] for n in p}, p, a.grad_rtol, grad_floor(p))
        if a.plan:
            names = ("ids", "attention_mask", "span_left", "span_right", "span_pos")
            lmc = lmrt_forward(a.plan, weights, {n: dump[n] for n in names})
            compare_logits(checks, k, lmc, {n: v.detach().numpy() for n, v in logits.items()}, a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

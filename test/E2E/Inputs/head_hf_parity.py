"""Compares `lmrt run --dump-dir` of the GPT-2 and LLaMA token-classification,
regression and sequence-classification heads (models/finetune/gpt_tokens.lm,
llama_tokens.lm, gpt_regress.lm, llama_regress.lm, gpt_classify.lm,
llama_classify.lm) with Hugging Face transformers' (4.46.3)
GPT2/LlamaForTokenClassification and GPT2/LlamaForSequenceClassification
(num_labels = 1, problem_type "regression"; num_labels = K > 1,
"single_label_classification") on the same weights and batches.

LMC's weights before each dumped step go to HF through the plan's `export hf`
map (hf_export.py), as in span_hf_parity.py. HF's word table has the 256
bytes, so the transforms' ids 256..258 ([PAD], [CLS], [SEP]) go to it as the
newline (10), as the heads read them, and no attention mask goes to HF (the
heads read none: padding follows the text, so causal attention keeps it from
every real position).

tokens: the dumped `labels` ([B, T], -100 off each word's first token) are
HF's labels; HF's loss is the cross-entropy over the labelled positions.
regression: HF pools each row at the token before its first pad_token_id;
the script sets pad_token_id to 0 (a byte no text holds) and writes 0 at every
position after the row's `last` (the dumped input), which causal attention
keeps from the pooled one; `targets` are HF's float labels (MSELoss).
classify: pooled as regression; `labels` ([B]) are HF's labels (the
cross-entropy over the K classes), the logits [B, K].

HF's loss must match LMC's to relative 1e-5, every gradient to relative 1e-4
(of its norm, with the floor of grad_floor), and the plan's forward program
(`lmrt forward --inputs`) HF's logits to 1e-4 ([B, T, classes] or [B]).

Usage: head_hf_parity.py --dump DIR --plan PLAN --model gpt2|llama --task tokens|regress|classify
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_common import Checks, check_grads, compare_logits, grad_floor, hf_model, lmrt_forward, parity_args, print_mapped, rel, step_weights, steps  # noqa: E402


def main():
    ap = parity_args()
    ap.add_argument("--model", choices=["gpt2", "llama"], required=True)
    ap.add_argument("--task", choices=["tokens", "regress", "classify"], required=True)
    a = ap.parse_args()
    family = {"gpt2": "GPT2", "llama": "Llama"}[a.model]
    cls = family + ("ForTokenClassification" if a.task == "tokens" else "ForSequenceClassification")
    init, ex, model, hf_params = hf_model(a, cls)
    if a.task != "tokens":
        model.config.pad_token_id = 0
    print_mapped(init, model)
    checks = Checks()
    weights = init
    for k, dump in steps(a.dump):
        ex.copy_into(model, ex.export(weights))
        model.zero_grad()
        ids = torch.from_numpy(dump["ids"].astype(np.int64))
        ids = torch.where(ids >= 256, 10, ids)
        if a.task == "tokens":
            labels = torch.from_numpy(dump["labels"].astype(np.int64))
            out = model(input_ids=ids, labels=labels)
            what = f"{int((dump['labels'] != -100).sum())} labelled positions"
            inputs = {"ids": dump["ids"]}
            hf_logits = out.logits.detach().numpy()
        else:
            B, T = ids.shape
            last = torch.from_numpy(dump["last"].astype(np.int64)) - torch.arange(B) * T
            ids = torch.where(torch.arange(T)[None, :] > last[:, None], 0, ids)
            if a.task == "regress":
                labels = torch.from_numpy(dump["targets"].astype(np.float32))
            else:
                labels = torch.from_numpy(dump["labels"].astype(np.int64))
            out = model(input_ids=ids, labels=labels)
            what = f"pooled at positions {last.tolist()}"
            if a.task == "classify":
                what += f", {out.logits.shape[-1]} classes, labels {labels.tolist()}"
            inputs = {"ids": dump["ids"], "last": dump["last"]}
            hf_logits = out.logits.detach().numpy()
            if a.task == "regress":
                hf_logits = hf_logits.reshape(B)
        out.loss.backward()
        e = rel(float(dump["loss"]), out.loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: {what}; loss lmc {float(dump['loss']):.8f} "
                     f"hf {out.loss.item():.8f} rel {e:.2e}")
        grads = ex.export({n: dump["grad." + n] for n in init})
        check_grads(checks, k, grads, hf_params, a.grad_rtol, grad_floor(hf_params))
        lmc = lmrt_forward(a.plan, weights, inputs)
        compare_logits(checks, k, lmc, {name: hf_logits for name in lmc}, a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

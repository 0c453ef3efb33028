"""Compares `lmrt run --dump-dir` of models/t5.lm (or models/t5-v1_1.lm) with
Hugging Face transformers' T5ForConditionalGeneration (4.46.3) on the same
weights and batches.

LMC's weights before each dumped step go through `lmrt weights export --format
hf` (the map, transposes, ties and config.json of the model file's `export hf`
section, hf_export.py): from_pretrained builds the HF model from the first
export, later ones are copied in, and LMC's gradients are exported the same way
to compare by HF name. The dumped batch of the span_corruption transform (ids,
attention_mask, decoder_ids, labels) goes to HF as input_ids, attention_mask,
decoder_input_ids and labels; HF's loss (relative 1e-5) and every gradient
(relative 1e-4 of its norm, floored at 1e-6 of the largest gradient's norm) must
match LMC's, in fp32. Each step also runs the model's forward program (`lmrt
forward --inputs` on the dumped ids, attention_mask and decoder_ids) and
compares its logits [B, Tt, vocab] with HF's to relative 1e-4. With
--pad-rows N the first N rows of the batch get their last quarter of inputs
padded (attention_mask 0, ids 0) and their labels' last quarter -100 before
both sides run forward, so the key padding bias is exercised too (forward
and loss only: the dumped gradients are of the unpadded batch).

With --save DIR the HF model, holding the weights after the last step, is
written by its own save_pretrained (for `lmrt weights import` to read back).

Usage: t5_hf_parity.py --dump DIR --plan PLAN [--pad-rows N] [--save DIR]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_common import Checks, check_grads, compare_logits, grad_floor, hf_model, lmrt_forward, parity_args, print_mapped, rel, step_weights, steps  # noqa: E402


def main():
    ap = parity_args()
    ap.add_argument("--pad-rows", type=int, default=0)
    ap.add_argument("--save")
    a = ap.parse_args()
    init, ex, model, hf_params = hf_model(a, "T5ForConditionalGeneration")
    print_mapped(init, model)

    checks = Checks()
    weights = init
    for k, dump in steps(a.dump):
        ex.copy_into(model, ex.export(weights))
        model.zero_grad()
        t = {n: torch.from_numpy(dump[n].astype(np.int64)) for n in ("ids", "decoder_ids", "labels")}
        mask = torch.from_numpy(dump["attention_mask"].astype(np.float32))
        out = model(input_ids=t["ids"], attention_mask=mask, decoder_input_ids=t["decoder_ids"], labels=t["labels"])
        out.loss.backward()
        e = rel(float(dump["loss"]), out.loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: loss lmc {float(dump['loss']):.8f} hf {out.loss.item():.8f} rel {e:.2e}")
        grads = ex.export({n: dump["grad." + n] for n in init})
        check_grads(checks, k, grads, hf_params, a.grad_rtol, grad_floor(hf_params))
        inputs = {n: dump[n] for n in ("ids", "attention_mask", "decoder_ids")}
        lmc = lmrt_forward(a.plan, weights, inputs)
        compare_logits(checks, k, lmc, {"logits": out.logits.detach().numpy()}, a.logits_rtol)
        if a.pad_rows:
            padded = {n: v.copy() for n, v in inputs.items()}
            ti = padded["ids"].shape[1]
            padded["ids"][:a.pad_rows, 3 * ti // 4:] = 0
            padded["attention_mask"][:a.pad_rows, 3 * ti // 4:] = 0
            lmc = lmrt_forward(a.plan, weights, padded)
            with torch.no_grad():
                hf = model(input_ids=torch.from_numpy(padded["ids"].astype(np.int64)),
                           attention_mask=torch.from_numpy(padded["attention_mask"].astype(np.float32)),
                           decoder_input_ids=t["decoder_ids"]).logits.numpy()
            compare_logits(checks, k, {"padded": lmc["logits"]}, {"padded": hf}, a.logits_rtol)
        weights = step_weights(init, dump)
    if a.save:
        ex.copy_into(model, ex.export(weights))
        model.save_pretrained(a.save)
        print(f"saved {a.save} (save_pretrained)")
    checks.finish()


if __name__ == "__main__":
    main()

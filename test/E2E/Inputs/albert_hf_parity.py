"""Compares `lmrt run --dump-dir` of models/albert.lm with Hugging Face transformers'
AlbertForPreTraining (4.46.3) on the same weights and batches.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) go through `lmrt weights export --format hf` (the name map, transposes,
ties and config.json of models/albert.lm's `export hf` section, see hf_export.py):
from_pretrained builds the HF model from the first export, later ones are copied
in, and LMC's gradients are exported the same way to compare by HF name. ALBERT
shares one layer's weights across all layers: LMC's albert.layer.* is HF's one
layer group, so the gradients compared are each the sum over every layer that
uses the weight. The dumped batch of the mlm transform with sop (ids, labels with
-100, segments, attention_mask, sop_labels) goes to HF as input_ids, labels,
token_type_ids, attention_mask and sentence_order_label, and HF's loss (MLM + SOP)
and autograd's gradients are compared with LMC's: the loss to relative 1e-5, each
gradient to relative 1e-4 (of its norm, or of 1e-6 of the largest gradient's norm
where it is smaller: the key biases' gradient is zero in exact arithmetic), in
fp32. Each step also runs the model's forward program (`lmrt forward --inputs`)
on the dumped ids, segments and attention_mask with that step's weights and
compares its logits with HF's prediction_logits and sop_logits (LMC: mlm_logits,
sop_logits) to relative 1e-4.

Usage: albert_hf_parity.py --dump DIR --plan PLAN
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_common import Checks, check_grads, compare_logits, grad_floor, hf_model, lmrt_forward, parity_args, print_mapped, rel, step_weights, steps  # noqa: E402


def main():
    ap = parity_args()
    a = ap.parse_args()
    init, ex, model, hf_params = hf_model(a, "AlbertForPreTraining")
    print_mapped(init, model, f"; {model.config.num_hidden_layers} layers share one")

    checks = Checks()
    weights = init
    for k, dump in steps(a.dump):
        ex.copy_into(model, ex.export(weights))
        model.zero_grad()
        t = lambda key: torch.from_numpy(dump[key].astype(np.int64))  # noqa: E731
        pad = int((dump["attention_mask"] == 0).sum())
        masked = int((dump["labels"] != -100).sum())
        swapped = int(dump["sop_labels"].sum())
        mask = torch.from_numpy(dump["attention_mask"].astype(np.float32))
        out = model(input_ids=t("ids"), token_type_ids=t("segments"), attention_mask=mask,
                    labels=t("labels"), sentence_order_label=t("sop_labels"))
        loss = out.loss
        loss.backward()
        err = rel(float(dump["loss"]), loss.item())
        checks.check(err <= a.loss_rtol, f"step {k}: {masked} masked, {pad} padding positions, {swapped} of "
                     f"{len(dump['sop_labels'])} pairs swapped; loss lmc {float(dump['loss']):.8f} "
                     f"hf {loss.item():.8f} rel {err:.2e}")
        grads = ex.export({n: dump["grad." + n] for n in init})
        check_grads(checks, k, grads, hf_params, a.grad_rtol, grad_floor(hf_params))
        lmc = lmrt_forward(a.plan, weights, {n: dump[n] for n in ("ids", "segments", "attention_mask")})
        hf = {"mlm_logits": out.prediction_logits, "sop_logits": out.sop_logits}
        compare_logits(checks, k, lmc, {n: v.detach().numpy() for n, v in hf.items()}, a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

"""Compares `lmrt run --dump-dir` of models/deberta.lm with Hugging Face transformers'
DebertaForMaskedLM (4.46.3) on the same weights and batches.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) go through `lmrt weights export --format hf` (the name map, transposes,
ties and config.json of models/deberta.lm's `export hf` section, see hf_export.py;
the fused q/k/v projection in_proj has the same per-head column order on both
sides): from_pretrained builds the HF model from the first export, later ones are
copied in, and LMC's gradients are exported the same way to compare by HF name. The
dumped batch of the mlm transform (ids, labels with -100, attention_mask) goes to HF
as input_ids, labels and attention_mask, and HF's loss and autograd's gradients are
compared with LMC's: the loss to relative 1e-5, each gradient to relative 1e-4 (of
its norm, or of 1e-6 of the largest gradient's norm where it is smaller), in fp32.
Each step also runs the model's forward program (`lmrt forward --inputs` on the
dumped ids and attention_mask with that step's weights) and compares its logits
[B, T, vocab], every position (padding included), with HF's to relative 1e-4.

The HF config (the export's) is DeBERTa's: relative_attention, pos_att_type
c2p|p2c, position_biased_input false, type_vocab_size 0, max_relative_positions -1
(so k is max_position_embeddings, LMC's max_rel), layer norm eps 1e-7; dropout 0;
pad_token_id = 256 (the mlm transform's [PAD]). GELU is DeBERTa's erf form (HF's
"gelu"; LMC's gelu(x, approximate = "none")).

Usage: deberta_hf_parity.py --dump DIR --plan PLAN
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
    init, ex, model, hf_params = hf_model(a, "DebertaForMaskedLM")
    print_mapped(init, model)

    checks = Checks()
    weights = init
    for k, dump in steps(a.dump):
        ex.copy_into(model, ex.export(weights))
        model.zero_grad()
        pad = int((dump["attention_mask"] == 0).sum())
        masked = int((dump["labels"] != -100).sum())
        ids = torch.from_numpy(dump["ids"].astype(np.int64))
        mask = torch.from_numpy(dump["attention_mask"].astype(np.float32))
        out = model(input_ids=ids, attention_mask=mask, labels=torch.from_numpy(dump["labels"].astype(np.int64)))
        loss = out.loss
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: {masked} masked, {pad} padding positions; loss lmc "
                     f"{float(dump['loss']):.8f} hf {loss.item():.8f} rel {e:.2e}")
        grads = ex.export({n: dump["grad." + n] for n in init})
        check_grads(checks, k, grads, hf_params, a.grad_rtol, grad_floor(hf_params))
        lmc = lmrt_forward(a.plan, weights, {n: dump[n] for n in ("ids", "attention_mask")})
        compare_logits(checks, k, lmc, {"logits": out.logits.detach().numpy()}, a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

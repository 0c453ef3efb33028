"""Compares `lmrt run --dump-dir` of models/llama.lm with Hugging Face transformers'
LlamaForCausalLM (4.46.3) on the same weights and batches.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) go through `lmrt weights export --format hf` (the name map, transposes
and config.json of models/llama.lm's `export hf` section, see hf_export.py):
from_pretrained builds the HF model from the first export, later ones are copied
in, and LMC's gradients are exported the same way to compare by HF name. HF's logits on
tokens[:, :-1] against tokens[:, 1:] give the loss, and autograd every parameter's
gradient. Tolerances: the loss to relative 1e-5, each gradient to relative 1e-4
(of its norm), in fp32.

Each step also runs the model's forward program (`lmrt forward --inputs` on the
dumped tokens[:, :-1] with that step's weights) and compares its logits with HF's
(relative 1e-4).

Usage: llama_hf_parity.py --dump DIR --plan PLAN
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_common import Checks, check_grads, compare_logits, hf_model, lmrt_forward, parity_args, print_mapped, rel, step_weights, steps  # noqa: E402


def main():
    ap = parity_args()
    a = ap.parse_args()
    init, ex, model, hf_params = hf_model(a, "LlamaForCausalLM", train=False)
    vocab = model.config.vocab_size
    print_mapped(init, model)

    checks = Checks()
    weights = init
    for k, dump in steps(a.dump):
        ex.copy_into(model, ex.export(weights))
        model.zero_grad()
        tokens = torch.from_numpy(dump["tokens"].astype(np.int64))
        logits = model(input_ids=tokens[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: loss lmc {float(dump['loss']):.8f} hf {loss.item():.8f} rel {e:.2e}")
        check_grads(checks, k, ex.export({n: dump["grad." + n] for n in init}), hf_params, a.grad_rtol)
        lmc = lmrt_forward(a.plan, weights, {"tokens": dump["tokens"][:, :-1].copy()})
        compare_logits(checks, k, lmc, {"logits": logits.detach().numpy()}, a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

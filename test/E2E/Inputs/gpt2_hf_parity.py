"""Compares `lmrt run --dump-dir` of models/gpt2.lm with Hugging Face transformers'
GPT2LMHeadModel (4.46.3) on the same weights and batches, and (with --count) that
HF's GPT-2 small built from its default config has the parameter count lmc printed.

LMC's weights before each dumped step go through `lmrt weights export --format hf`
(the name map and config.json of models/gpt2.lm's `export hf` section, see
hf_export.py): from_pretrained builds the HF model from the first export, later
ones are copied in, and LMC's gradients are exported the same way to compare by
HF name. HF's logits on tokens[:, :-1] against tokens[:, 1:] give the loss, and
autograd every gradient.
Tolerances: the loss to relative 1e-5, each gradient to relative 1e-4 (of its
norm), in fp32.

Each step also runs the model's forward program (`lmrt forward --inputs` on the
dumped tokens[:, :-1] with that step's weights) and compares its logits with HF's
(relative 1e-4).

With --autocast (a dump of a `--precision bf16` plan), HF runs forward and
backward under torch.autocast("cpu", dtype=torch.bfloat16) and LMC is compared
with that, at the tolerances given; each step also prints how far HF's own
autocast run is from its fp32 run (the yardstick: the two mixed-precision
policies differ, see test/E2E/gpt2-hf-parity-bf16.test).

Usage: gpt2_hf_parity.py --dump DIR --plan PLAN [--count N] [--autocast]
"""
import argparse
import os
import sys

import numpy as np
import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_export import Exporter  # noqa: E402
from parity_common import Checks, check_grads, compare_logits, lmrt_forward, load, rel, step_weights, steps  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--plan", required=True, help="the plan that wrote the dump (its hf map)")
    ap.add_argument("--count", type=int, help="lmc's parameter count of GPT-2 small (the default config)")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--logits-rtol", type=float, default=1e-4)
    ap.add_argument("--autocast", action="store_true", help="HF under CPU autocast bf16 (a bf16 plan's dump)")
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    checks = Checks()
    if a.count is not None:
        n = sum(p.numel() for p in GPT2LMHeadModel(GPT2Config()).parameters())
        checks.check(n == a.count, f"GPT-2 small: HF {n:,} parameters, lmc {a.count:,}")

    init = load(os.path.join(a.dump, "init.safetensors"))
    ex = Exporter(a.plan)
    model = ex.model(init, "GPT2LMHeadModel")
    hf_params = dict(model.named_parameters())  # lm_head.weight is wte's tensor: listed once
    vocab = model.config.vocab_size
    print(f"{len(init)} parameters mapped; LMC {sum(v.size for v in init.values()):,} numbers, "
          f"HF {sum(p.numel() for p in model.parameters()):,}")

    weights = init
    for k, dump in steps(a.dump):
        ex.copy_into(model, ex.export(weights))
        tokens = torch.from_numpy(dump["tokens"].astype(np.int64))

        def hf_step():
            model.zero_grad()
            logits = model(input_ids=tokens[:, :-1]).logits
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
            loss.backward()
            return logits.float(), loss

        if a.autocast:
            logits32, loss32 = hf_step()
            grads32 = {n: p.grad.clone() for n, p in hf_params.items()}
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits, loss = hf_step()
            worst = max(rel(grads32[n].numpy(), p.grad.numpy()) for n, p in hf_params.items())
            print(f"step {k}: HF autocast bf16 vs HF fp32: loss rel {rel(loss32.item(), loss.item()):.2e}, "
                  f"max grad rel {worst:.2e}, logits rel {rel(logits32.detach().numpy(), logits.detach().numpy()):.2e}")
        else:
            logits, loss = hf_step()
        e = rel(float(dump["loss"]), loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: loss lmc {float(dump['loss']):.8f} hf {loss.item():.8f} rel {e:.2e}")
        check_grads(checks, k, ex.export({n: dump["grad." + n] for n in init}), hf_params, a.grad_rtol)
        lmc = lmrt_forward(a.plan, weights, {"tokens": dump["tokens"][:, :-1].copy()})
        compare_logits(checks, k, lmc, {"logits": logits.detach().numpy()}, a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

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

Usage: llama_hf_parity.py --dump DIR --plan PLAN
"""
import argparse
import glob
import os
import sys

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402
from hf_export import Exporter  # noqa: E402

def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--plan", required=True, help="the plan that wrote the dump (its hf map)")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")

    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    ex = Exporter(a.plan)
    model = ex.model(init, "LlamaForCausalLM")
    hf_params = dict(model.named_parameters())
    vocab = model.config.vocab_size
    print(f"{len(init)} parameters mapped; LMC {sum(v.size for v in init.values()):,} numbers, "
          f"HF {sum(p.numel() for p in model.parameters()):,}")

    steps = sorted(glob.glob(os.path.join(a.dump, "step*.safetensors")),
                   key=lambda s: int(os.path.basename(s)[4:].split(".")[0]))
    if not steps:
        sys.exit("no step*.safetensors in " + a.dump)
    failures = 0
    weights = init
    for k, path in enumerate(steps, 1):
        dump = safetensors_np.load(path)
        ex.copy_into(model, ex.export(weights))
        model.zero_grad()
        tokens = torch.from_numpy(dump["tokens"].astype(np.int64))
        logits = model(input_ids=tokens[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        ok = e <= a.loss_rtol
        failures += not ok
        print(f"step {k}: loss lmc {float(dump['loss']):.8f} hf {loss.item():.8f} rel {e:.2e} {'ok' if ok else 'FAIL'}")
        grads = ex.export({n: dump["grad." + n] for n in init})
        errs = [(rel(g, hf_params[h].grad.numpy()), h) for h, g in grads.items()]
        worst = max(errs)
        ok = worst[0] <= a.grad_rtol
        failures += not ok
        print(f"step {k}: {len(errs)} gradients, max rel err {worst[0]:.2e} ({worst[1]}) {'ok' if ok else 'FAIL'}")
        weights = {n: dump["param." + n] for n in init}
    print("parity: " + ("ok" if failures == 0 else f"FAILED ({failures} checks)"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

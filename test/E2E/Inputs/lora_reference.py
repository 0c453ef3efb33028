"""A PyTorch reference of LoRA (test/E2E/lora.test): PEFT's LoraLayer math written
out on Hugging Face transformers' GPT2LMHeadModel, checked against `lmrt run
--dump-dir` of a plan compiled with `lora = { ... }` on the same weights and batches.

  lora_reference.py --dump DIR --base-plan GPT.plan --rank R --alpha A [--f64]

GPT.plan is models/gpt2.lm at the same shapes without lora: its `export hf` map
builds the HF model from the dump's base weights. Each LMC target W (a parameter
with W.lora_A and W.lora_B beside it) is the HF Conv1D whose weight is W's tensor
(GPT-2's Conv1D stores [in, out] as LMC does; found by value, which must be
unique), and is wrapped as PEFT wraps it (fan_in_fan_out = True):

    y = base(x) + lora_B(lora_A(dropout(x))) * (alpha / r)

lora_A = nn.Linear(in, r), lora_B = nn.Linear(r, out), no bias, dropout the
identity (lora_dropout = 0), so LMC's A [in, r] is lora_A.weight^T and B [r, out]
lora_B.weight^T. Every base parameter is frozen (get_peft_model). Checked: PEFT's
initialisation (B zero, A inside kaiming_uniform(a = sqrt(5))'s bound 1/sqrt(in)
and filling it), then for each dumped step the loss (relative 1e-5), every adapter's
gradient (relative 1e-5 of its norm; A's is 0 at step 1, where B is 0), that LMC
computed no gradient for a base parameter, and that the base stayed bit-identical.
"""
import argparse
import os
import sys

import numpy as np
import torch
import transformers
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_export import Exporter  # noqa: E402
from parity_common import Checks, load, rel, step_weights, steps  # noqa: E402


class LoraWrapped(nn.Module):
    """PEFT's lora.Linear forward around an HF Conv1D (fan_in_fan_out)."""

    def __init__(self, base, r, alpha):
        super().__init__()
        fan_in, fan_out = base.weight.shape
        self.base = base
        self.lora_A = nn.Linear(fan_in, r, bias=False).to(base.weight.dtype)
        self.lora_B = nn.Linear(r, fan_out, bias=False).to(base.weight.dtype)
        self.lora_dropout = nn.Identity()
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--base-plan", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--alpha", type=float, required=True)
    ap.add_argument("--f64", action="store_true")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--final", help="the run's final weights (--out), with --merged")
    ap.add_argument("--merged", help="`lmrt weights merge` of --final: checked against PEFT's merge")
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    checks = Checks()
    init = load(os.path.join(a.dump, "init.safetensors"))
    targets = sorted(n[:-len(".lora_A")] for n in init if n.endswith(".lora_A"))
    base_names = [n for n in init if not n.endswith((".lora_A", ".lora_B"))]
    ex = Exporter(a.base_plan)
    model = ex.model({n: init[n] for n in base_names}, "GPT2LMHeadModel")
    if a.f64:
        model.double()
    model.train()
    for p in model.parameters():
        p.requires_grad_(False)

    # Each target's Conv1D, by its weight's value, wrapped in place.
    modules = dict(model.named_modules())
    wrapped = {}
    for t in targets:
        found = [n for n, m in modules.items() if isinstance(m, transformers.pytorch_utils.Conv1D)
                 and tuple(m.weight.shape) == init[t].shape and np.array_equal(m.weight.detach().double().numpy(), init[t])]
        if len(found) != 1:
            sys.exit(f"target {t}: {len(found)} Conv1D modules hold its weight (need exactly one)")
        parent, _, child = found[0].rpartition(".")
        w = LoraWrapped(modules[found[0]], a.rank, a.alpha)
        setattr(modules[parent], child, w)
        wrapped[t] = w
    print(f"{len(targets)} LoRA targets: " + ", ".join(targets))

    # PEFT's initialisation: B = 0; A uniform within 1/sqrt(in), reaching near it.
    for t in targets:
        A, B = init[t + ".lora_A"], init[t + ".lora_B"]
        bound = 1 / np.sqrt(A.shape[0])
        checks.check(not B.any() and np.abs(A).max() <= bound and np.abs(A).max() > 0.9 * bound,
                     f"init {t}: B zero, |A| max {np.abs(A).max():.4f} within kaiming bound {bound:.4f}")

    weights = init
    for k, dump in steps(a.dump):
        with torch.no_grad():
            for t, w in wrapped.items():
                w.lora_A.weight.copy_(torch.from_numpy(weights[t + ".lora_A"].T.copy()))
                w.lora_B.weight.copy_(torch.from_numpy(weights[t + ".lora_B"].T.copy()))
                w.lora_A.weight.requires_grad_(True)
                w.lora_B.weight.requires_grad_(True)
                w.lora_A.weight.grad = None
                w.lora_B.weight.grad = None
        tokens = torch.from_numpy(dump["tokens"].astype(np.int64))
        logits = model(input_ids=tokens[:, :-1]).logits
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        checks.check(e <= a.rtol, f"step {k}: loss lmc {float(dump['loss']):.8f} torch {loss.item():.8f} rel {e:.2e}")
        worst, n = (0.0, ""), 0
        for t, w in wrapped.items():
            for side, lin in (("lora_A", w.lora_A), ("lora_B", w.lora_B)):
                g = dump[f"grad.{t}.{side}"]
                ref = lin.weight.grad.numpy().T
                # A's gradient is 0 at step 1 (B = 0) on both sides; compare it against B's scale then.
                err = rel(g, ref, floor=1e-30 if np.abs(ref).max() > 0 else 1.0)
                worst = max(worst, (err, f"{t}.{side}"))
                n += 1
        checks.check(worst[0] <= a.rtol, f"step {k}: {n} adapter gradients, max rel err {worst[0]:.2e} ({worst[1]})")
        # The dump writes a frozen parameter's gradient as zeros (the train step has none).
        base_grads = [n for n in base_names if "grad." + n in dump and np.any(dump["grad." + n] != 0)]
        moved = [n for n in base_names if dump["param." + n].tobytes() != init[n].tobytes()]
        checks.check(not base_grads and not moved, f"step {k}: base: {len(base_names)} parameters, zero gradient "
                     f"and bit-identical ({len(base_grads)} with a gradient, {len(moved)} moved)")
        weights = step_weights(init, dump)
    if a.merged:
        # PEFT's merge_and_unload on Conv1D: W += transpose(B A) * scaling (B, A as nn.Linear weights).
        final, merged = load(a.final), load(a.merged)
        worst = (0.0, "")
        for t in targets:
            A = torch.from_numpy(final[t + ".lora_A"].T.copy()).double()
            B = torch.from_numpy(final[t + ".lora_B"].T.copy()).double()
            ref = torch.from_numpy(final[t]).double() + (B @ A).T * (a.alpha / a.rank)
            worst = max(worst, (rel(merged[t], ref.numpy()), t))
        same = all(merged[n].tobytes() == final[n].tobytes() for n in base_names if n not in targets)
        checks.check(worst[0] <= a.rtol and same and sorted(merged) == sorted(base_names),
                     f"merge: {len(targets)} weights against PEFT's merge, max rel err {worst[0]:.2e}; "
                     f"the other {len(base_names) - len(targets)} unchanged; no adapters left")
    checks.finish()


if __name__ == "__main__":
    main()

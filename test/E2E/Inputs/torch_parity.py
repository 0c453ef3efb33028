"""Compares `lmrt run --dump-dir` against PyTorch on the same weights and batches.

Per step: the loss (relative 1e-5) and every gradient (relative 1e-4 in norm) against
PyTorch's autograd; then PyTorch's AdamW (decoupled weight decay on rank >= 2, global-norm
clipping) is stepped with LMC's gradients and each parameter's update is compared with
LMC's (relative 1e-4 in norm). Feeding the optimizer the same gradients keeps the update
check tight: Adam divides by sqrt(v), so fp32 noise in near-zero gradients (the key bias
of attention has an exactly zero gradient) would otherwise dominate the comparison.
"""
import argparse
import glob
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_np  # noqa: E402
from torch_gpt import causal_lm_loss  # noqa: E402


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--betas", type=float, nargs=2, required=True)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, required=True)
    ap.add_argument("--clip", type=float, required=True)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--update-rtol", type=float, default=1e-4)
    a = ap.parse_args()
    torch.manual_seed(0)
    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    params = {k: torch.tensor(v, requires_grad=True) for k, v in init.items()}
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1.0, betas=tuple(a.betas), eps=a.eps)
    steps = sorted(glob.glob(os.path.join(a.dump, "step*.safetensors")),
                   key=lambda s: int(os.path.basename(s)[4:].split(".")[0]))
    if not steps:
        sys.exit("no step*.safetensors in " + a.dump)
    failures = 0
    before = {n: v.copy() for n, v in init.items()}
    for k, path in enumerate(steps, 1):
        d = safetensors_np.load(path)
        opt.zero_grad()
        loss = causal_lm_loss(params, torch.tensor(d["tokens"]), a.layers, a.heads)
        loss.backward()
        e = rel(float(d["loss"]), loss.item())
        ok = e <= a.loss_rtol
        failures += not ok
        print(f"step {k}: loss lmc {float(d['loss']):.8f} torch {loss.item():.8f} rel {e:.2e} {'ok' if ok else 'FAIL'}")
        worst = max((rel(d["grad." + n], p.grad.numpy()), n) for n, p in params.items())
        ok = worst[0] <= a.grad_rtol
        failures += not ok
        print(f"step {k}: max grad rel err {worst[0]:.2e} ({worst[1]}) {'ok' if ok else 'FAIL'}")
        with torch.no_grad():
            for n, p in params.items():
                p.grad.copy_(torch.from_numpy(d["grad." + n]))
        torch.nn.utils.clip_grad_norm_(list(params.values()), a.clip)
        for g in opt.param_groups:
            g["lr"] = float(d["lr"])
        torch_before = {n: p.detach().numpy().copy() for n, p in params.items()}
        opt.step()
        worst = max((rel(d["param." + n] - before[n], p.detach().numpy() - torch_before[n]), n)
                    for n, p in params.items())
        ok = worst[0] <= a.update_rtol
        failures += not ok
        print(f"step {k}: max AdamW update rel err {worst[0]:.2e} ({worst[1]}) {'ok' if ok else 'FAIL'}")
        before = {n: d["param." + n] for n in params}
    print("parity: " + ("ok" if failures == 0 else f"FAILED ({failures} checks)"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

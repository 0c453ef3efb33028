"""Compares `lmrt run --dump-dir` against PyTorch on the same weights and batches:
the loss (relative 1e-5), every gradient (relative 1e-4 in norm), and the parameters
after each AdamW step (decoupled weight decay on rank >= 2, global-norm clipping)."""
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
    ap.add_argument("--param-rtol", type=float, default=1e-4)
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
        torch.nn.utils.clip_grad_norm_(list(params.values()), a.clip)
        for g in opt.param_groups:
            g["lr"] = float(d["lr"])
        opt.step()
        worst = max((rel(d["param." + n], p.detach().numpy()), n) for n, p in params.items())
        ok = worst[0] <= a.param_rtol
        failures += not ok
        print(f"step {k}: max param rel err after AdamW {worst[0]:.2e} ({worst[1]}) {'ok' if ok else 'FAIL'}")
    print("parity: " + ("ok" if failures == 0 else f"FAILED ({failures} checks)"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

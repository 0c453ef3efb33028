"""Steps a reference optimizer on LMC's own gradients and compares every update.

Reads `lmrt run --dump-dir` (init.safetensors, then per step the raw gradients
grad.<p>, the learning rate and the parameters after the update param.<p>),
clips the gradients as the plan does (global norm, then by value), steps the
reference with the step's learning rate times each parameter's group multiple,
and compares each parameter's update with LMC's at relative --rtol in norm.
The --frozen parameters must not move.

References: torch.optim.SGD, torch.optim.AdamW and torch.optim.Adagrad; HF transformers' Adafactor;
LAMB and Lion written below after their papers (torch has neither).
"""
import argparse
import fnmatch
import glob
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_np  # noqa: E402
from parity_common import rel  # noqa: E402


class Lamb(torch.optim.Optimizer):
    """You et al. 2020 ("Large Batch Optimization for Deep Learning"), Algorithm 2:
    Adam's bias-corrected direction plus L2 weight decay, r = m_hat / (sqrt(v_hat) + eps) + wd * w,
    then w -= lr * phi(||w||) / ||r|| * r with phi the identity; the ratio is 1 where either norm
    is 0 or the group is excluded from layer adaptation (ALBERT: what takes no decay)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, trust_ratio=True):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      trust_ratio=trust_ratio))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            b1, b2 = g["betas"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["t"] = 0
                    st["m"] = torch.zeros_like(p)
                    st["v"] = torch.zeros_like(p)
                st["t"] += 1
                t = st["t"]
                st["m"].mul_(b1).add_(p.grad, alpha=1 - b1)
                st["v"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                mhat = st["m"] / (1 - b1 ** t)
                vhat = st["v"] / (1 - b2 ** t)
                r = mhat / (vhat.sqrt() + g["eps"]) + g["weight_decay"] * p
                ratio = 1.0
                wn, rn = p.norm().item(), r.norm().item()
                if g["trust_ratio"] and wn > 0 and rn > 0:
                    ratio = wn / rn
                p.add_(r, alpha=-g["lr"] * ratio)


class Lion(torch.optim.Optimizer):
    """Chen et al. 2023 ("Symbolic Discovery of Optimization Algorithms"), Algorithm 2:
    w *= 1 - lr * wd; c = b1 m + (1 - b1) g; w -= lr * sign(c); m = b2 m + (1 - b2) g."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            b1, b2 = g["betas"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                m = self.state[p].setdefault("m", torch.zeros_like(p))
                p.mul_(1 - g["lr"] * g["weight_decay"])
                c = m * b1 + p.grad * (1 - b1)
                p.add_(torch.sign(c), alpha=-g["lr"])
                m.mul_(b2).add_(p.grad, alpha=1 - b2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--optimizer", required=True, choices=["adamw", "sgd", "lamb", "lion", "adafactor", "adagrad"])
    ap.add_argument("--frozen", nargs="*", default=[], help="patterns of the frozen parameters")
    ap.add_argument("--lr-scale", nargs="*", default=[], help="pattern=multiple")
    ap.add_argument("--no-decay", nargs="*", default=None, help="HF's rule: all decay but these; else rank >= 2")
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--betas", type=float, nargs=2, default=None)
    ap.add_argument("--eps", type=float, default=None)
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--initial-accumulator", type=float, default=0.0, help="Adagrad's initial_accumulator_value")
    ap.add_argument("--nesterov", action="store_true")
    ap.add_argument("--clip", type=float, default=0.0)
    ap.add_argument("--clip-value", type=float, default=0.0)
    ap.add_argument("--steps", type=int, default=0, help="steps the dump must have")
    ap.add_argument("--rtol", type=float, default=1e-6)
    a = ap.parse_args()

    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    steps = sorted(glob.glob(os.path.join(a.dump, "step*.safetensors")),
                   key=lambda s: int(os.path.basename(s)[4:].split(".")[0]))
    if not steps or len(steps) < a.steps:
        sys.exit(f"{len(steps)} step dumps in {a.dump}, expected {a.steps}")
    params = {n: torch.tensor(v) for n, v in init.items()}
    frozen = {n for n in params if any(fnmatch.fnmatchcase(n, p) for p in a.frozen)}

    def decays(n):
        if a.no_decay is not None:
            return not any(fnmatch.fnmatchcase(n, p) for p in a.no_decay)
        return params[n].dim() >= 2

    def scale(n):
        for spec in a.lr_scale:
            pattern, value = spec.rsplit("=", 1)
            if fnmatch.fnmatchcase(n, pattern):
                return float(value)
        return 1.0

    # One torch parameter group per trainable parameter: its decay and lr multiple.
    trainable = [n for n in params if n not in frozen]
    groups = [{"params": [params[n]], "weight_decay": a.weight_decay if decays(n) else 0.0} for n in trainable]
    kw = {}
    if a.betas:
        kw["betas"] = tuple(a.betas)
    if a.eps is not None:
        kw["eps"] = a.eps
    if a.optimizer == "adamw":
        opt = torch.optim.AdamW(groups, lr=1.0, **kw)
    elif a.optimizer == "sgd":
        opt = torch.optim.SGD(groups, lr=1.0, momentum=a.momentum, nesterov=a.nesterov)
    elif a.optimizer == "lamb":
        for g, n in zip(groups, trainable):
            g["trust_ratio"] = decays(n)  # ALBERT: excluded from decay, excluded from adaptation
        opt = Lamb(groups, lr=1.0, **kw)
    elif a.optimizer == "lion":
        opt = Lion(groups, lr=1.0, **kw)
    elif a.optimizer == "adagrad":
        opt = torch.optim.Adagrad(groups, lr=1.0, initial_accumulator_value=a.initial_accumulator, **kw)
    else:
        from transformers.optimization import Adafactor
        opt = Adafactor(groups, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta1=None,
                        relative_step=True, scale_parameter=True, warmup_init=False)

    failures, worst_all = 0, 0.0
    for k, path in enumerate(steps, 1):
        d = safetensors_np.load(path)
        with torch.no_grad():
            for n in trainable:
                params[n].grad = torch.tensor(d["grad." + n])
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_([params[n] for n in trainable], a.clip)
        if a.clip_value > 0:
            torch.nn.utils.clip_grad_value_([params[n] for n in trainable], a.clip_value)
        for g, n in zip(opt.param_groups, trainable):
            g["lr"] = None if a.optimizer == "adafactor" else float(d["lr"]) * scale(n)
        before = {n: p.detach().numpy().copy() for n, p in params.items()}
        lmc_before = init if k == 1 else safetensors_np.load(steps[k - 2])
        lmc_before = {n: (init[n] if k == 1 else lmc_before["param." + n]) for n in params}
        opt.step()
        if a.optimizer == "adafactor":
            # HF's relative step has no learning rate to multiply; its update (decay
            # included) is linear in the step size and its state independent of it,
            # so a group's multiple scales the whole change.
            with torch.no_grad():
                for n in trainable:
                    if scale(n) != 1.0:
                        params[n].copy_(torch.tensor(before[n]) + scale(n) * (params[n] - torch.tensor(before[n])))
        worst = (0.0, "")
        for n in params:
            lmc_update = d["param." + n] - lmc_before[n]
            if n in frozen:
                if np.any(lmc_update != 0):
                    failures += 1
                    print(f"step {k}: frozen {n} moved FAIL")
                continue
            worst = max(worst, (rel(lmc_update, params[n].detach().numpy() - before[n], floor=1e-300), n))
        ok = worst[0] <= a.rtol
        failures += not ok
        worst_all = max(worst_all, worst[0])
        print(f"step {k}: max {a.optimizer} update rel err {worst[0]:.2e} ({worst[1]}) {'ok' if ok else 'FAIL'}")
    print(f"{a.optimizer}: {len(steps)} steps, {len(trainable)} trained and {len(frozen)} frozen parameters, "
          f"max update rel err {worst_all:.2e}")
    print(f"reference: {'ok' if failures == 0 else 'FAIL'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

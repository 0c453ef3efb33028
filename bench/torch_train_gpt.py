"""PyTorch baseline for bench/gpt_tiny.sh and bench/roofline.sh, eager or through torch.compile
(--compile): trains the same GPT (test/E2E/Inputs/torch_gpt.py, LMC's parameter names and math)
with the same recipe on the same byte shards, and reports tokens/s and the validation loss. The
batch order differs from lmrt's; the recipe does not. With --timing-json it instead prints one
JSON object with the mean step time over the steps after --warmup-steps (no validation).
--fused-adamw and --autocast bf16 are the PyTorch 2 settings bench/roofline.sh compares against
(run them with a PyTorch 2 Python: bench/setup-torch2.sh)."""
import argparse
import contextlib
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "E2E", "Inputs"))
import torch_gpt  # noqa: E402
from torch_gpt import causal_lm_loss  # noqa: E402


def sdpa_attention(q, k, v, heads):
    """torch_gpt.attention's math through F.scaled_dot_product_attention (causal)."""
    B, T, D = q.shape
    q, k, v = (t.view(B, T, heads, D // heads).transpose(1, 2) for t in (q, k, v))
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).reshape(B, T, D)


def read_shard(path):
    raw = np.fromfile(path, dtype=np.uint8)
    if raw[:8].tobytes() != b"LMCSHARD":
        sys.exit(f"{path}: not an LMC shard")
    width = int(raw[12:16].view(np.uint32)[0])
    count = int(raw[16:24].view(np.uint64)[0])
    body = raw[32:32 + width * count]
    return body.view(np.uint16 if width == 2 else np.uint32).astype(np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=64)
    ap.add_argument("--seq", type=int, default=0, help="tokens per row (default: --ctx)")
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--min-lr", type=float, default=3e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--timing-json", action="store_true")
    ap.add_argument("--warmup-steps", type=int, default=1, help="untimed steps with --timing-json")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (the bench's --device cuda mode)")
    ap.add_argument("--tf32", action="store_true", help="cuda: f32 matmuls on TF32 tensor cores")
    ap.add_argument("--attention", choices=["manual", "sdpa"], default="manual",
                    help="manual: torch_gpt's (the T x T matrix, the oracle's math); sdpa: PyTorch's fused "
                         "scaled_dot_product_attention (flash-style kernels, what one writes for speed)")
    ap.add_argument("--compile", action="store_true", help="train through torch.compile (inductor)")
    ap.add_argument("--fused-adamw", action="store_true",
                    help="AdamW(fused=True): one fused optimizer kernel (PyTorch >= 2.4 on the CPU)")
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none",
                    help="bf16: forward and backward under torch.autocast(dtype=torch.bfloat16) (CPU autocast: "
                         "GEMMs in bf16, master weights, optimizer and loss in fp32)")
    a = ap.parse_args()
    if a.attention == "sdpa":
        torch_gpt.attention = sdpa_attention  # gpt_logits looks `attention` up when it runs
    loss_fn = torch.compile(causal_lm_loss) if a.compile else causal_lm_loss
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = a.tf32
        torch.backends.cudnn.allow_tf32 = a.tf32
    seq = a.seq or a.ctx
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    train, val = read_shard(os.path.join(a.data, "train.bin")), read_shard(os.path.join(a.data, "val.bin"))
    V, D, L = a.vocab, a.d, a.layers
    def normal(*s, std=0.02):
        return (torch.randn(*s) * std).to(dev).requires_grad_()
    p = {"wte": normal(V, D), "wpe": normal(a.ctx, D, std=0.01),
         "ln_f.gamma": torch.ones(D, requires_grad=True), "ln_f.beta": torch.zeros(D, requires_grad=True)}
    for i in range(L):
        s = f"layer.{i}"
        for ln in ("ln_1", "ln_2"):
            p[f"{s}.{ln}.gamma"] = torch.ones(D, requires_grad=True)
            p[f"{s}.{ln}.beta"] = torch.zeros(D, requires_grad=True)
        p[s + ".attn.wqkv"], p[s + ".attn.bqkv"] = normal(D, 3 * D), torch.zeros(3 * D, requires_grad=True)
        p[s + ".attn.wo"], p[s + ".attn.bo"] = normal(D, D, std=0.02 / math.sqrt(2 * L)), torch.zeros(D, requires_grad=True)
        p[s + ".mlp.w1"], p[s + ".mlp.b1"] = normal(D, 4 * D), torch.zeros(4 * D, requires_grad=True)
        p[s + ".mlp.w2"], p[s + ".mlp.b2"] = normal(4 * D, D, std=0.02 / math.sqrt(2 * L)), torch.zeros(D, requires_grad=True)
    p = {k: (t if t.device == dev else t.detach().to(dev).requires_grad_()) for k, t in p.items()}
    decay = [t for t in p.values() if t.dim() >= 2]
    rest = [t for t in p.values() if t.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.99), **({"fused": True} if a.fused_adamw else {}))
    autocast = (lambda: torch.autocast(dev.type, dtype=torch.bfloat16)) if a.autocast == "bf16" else contextlib.nullcontext
    rng = np.random.default_rng(1)

    def batch(src):
        ix = rng.integers(0, len(src) - seq - 1, a.batch)
        return torch.from_numpy(np.stack([src[i:i + seq + 1] for i in ix])).to(dev)

    tokens = 0
    t0 = time.time()
    timed_from = None
    for step in range(a.steps):
        if step == a.warmup_steps:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            timed_from = time.perf_counter()
        lr = a.lr * (step + 1) / (a.warmup + 1) if step < a.warmup else \
            a.min_lr + 0.5 * (a.lr - a.min_lr) * (1 + math.cos(math.pi * (step - a.warmup) / max(1, a.steps - a.warmup)))
        for g in opt.param_groups:
            g["lr"] = lr
        with autocast():
            loss = loss_fn(p, batch(train), L, a.heads)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
        opt.step()
        tokens += a.batch * seq
        if a.timing_json:
            continue
        if step % 100 == 0 or step == a.steps - 1:
            print(f"torch step {step + 1}/{a.steps} | loss {loss.item():.4f} | {tokens / (time.time() - t0):.0f} tok/s", flush=True)
    elapsed = time.time() - t0
    if a.timing_json:
        if timed_from is None:
            sys.exit("--timing-json needs more --steps than --warmup-steps")
        if dev.type == "cuda":
            torch.cuda.synchronize()
        step_s = (time.perf_counter() - timed_from) / (a.steps - a.warmup_steps)
        print(json.dumps({"step_time_s": step_s, "tokens_per_s": a.batch * seq / step_s,
                          "timed_steps": a.steps - a.warmup_steps, "threads": a.threads,
                          "torch_version": torch.__version__}))
        return
    with torch.no_grad():
        vl = sum(loss_fn(p, batch(val), L, a.heads).item() for _ in range(20)) / 20
    print(f"torch: {a.steps} steps in {elapsed:.1f} s, {tokens / elapsed:.0f} tok/s, val_loss {vl:.4f}")


if __name__ == "__main__":
    main()

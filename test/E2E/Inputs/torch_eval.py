"""Recomputes `lmrt eval` in PyTorch (torch_gpt.py, the same GPT) and checks its
printed loss, perplexity and bits per byte.

  torch_eval.py --eval-log LOG --weights W --data DIR --layers L --heads H
                --rows B --seq T [--batches N] [--split val]

The windows are evaluate.h's: window w is tokens [w*T, w*T + T] of the split's
LMC shard, B to a batch in order, only whole batches (at most N)."""
import argparse
import json
import math
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_np  # noqa: E402
from foreign_shards import read_lmc_shard  # noqa: E402
from torch_gpt import causal_lm_loss  # noqa: E402

ap = argparse.ArgumentParser()
for name in ("--eval-log", "--weights", "--data"):
    ap.add_argument(name, required=True)
for name in ("--layers", "--heads", "--rows", "--seq"):
    ap.add_argument(name, type=int, required=True)
ap.add_argument("--batches", type=int, default=0)
ap.add_argument("--split", default="val")
a = ap.parse_args()

log = open(a.eval_log).read()
got = {k: float(re.search(pattern, log).group(1)) for k, pattern in {
    "loss": r"loss: ([0-9.]+) nats/token", "ppl": r"perplexity: ([0-9.]+)",
    "bpb": r"bits per byte: ([0-9.]+)"}.items()}

p = {k: torch.from_numpy(v.astype(np.float64)) for k, v in safetensors_np.load(a.weights).items()}
tokens, _ = read_lmc_shard(os.path.join(a.data, a.split + ".bin"))
tokens = torch.from_numpy(tokens.astype(np.int64))
B, T = a.rows, a.seq
batches = (len(tokens) - 1) // T // B
if a.batches:
    batches = min(batches, a.batches)
losses = []
with torch.no_grad():
    for b in range(batches):
        rows = [tokens[(b * B + r) * T:(b * B + r) * T + T + 1] for r in range(B)]
        losses.append(causal_lm_loss(p, torch.stack(rows), a.layers, a.heads).item())
loss = sum(losses) / len(losses)
meta = json.load(open(os.path.join(a.data, "meta.json")))
split = meta[a.split]
bytes_per_token = 1.0 if meta["tokenizer"] == "bytes" else split["bytes"] / split["tokens"]
want = {"loss": loss, "ppl": math.exp(loss), "bpb": loss / math.log(2) / bytes_per_token}
print(f"torch: {batches} batches, loss {loss:.6f}, perplexity {want['ppl']:.4f}, bits per byte {want['bpb']:.6f}")
for k in want:
    if not math.isclose(got[k], want[k], rel_tol=1e-5):
        sys.exit(f"{k}: lmrt {got[k]} != torch {want[k]}")
print("eval parity: ok")

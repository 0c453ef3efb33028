"""Compares `lmrt run --dump-dir` of models/gpt2.lm with Hugging Face transformers'
GPT2LMHeadModel (4.46.3) on the same weights and batches, and (with --count) that
HF's GPT-2 small built from its default config has the parameter count lmc printed.

LMC's weights before each dumped step are loaded into an HF model built from the
same config (dropout 0, tanh GELU, tied head) through the name map below; HF's
Conv1D stores [in, out] as LMC does, so nothing is transposed. HF's logits on
tokens[:, :-1] against tokens[:, 1:] give the loss, and autograd every gradient.
Tolerances: the loss to relative 1e-5, each gradient to relative 1e-4 (of its
norm), in fp32.

Usage: gpt2_hf_parity.py --dump DIR --heads H [--count N]
"""
import argparse
import glob
import os
import re
import sys

import numpy as np
import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

# LMC parameter path -> HF name (lm_head.weight is tied to wte).
RULES = [
    (r"wte", "transformer.wte.weight"),
    (r"wpe", "transformer.wpe.weight"),
    (r"ln_f\.gamma", "transformer.ln_f.weight"),
    (r"ln_f\.beta", "transformer.ln_f.bias"),
    (r"layer\.(\d+)\.(ln_1|ln_2)\.gamma", r"transformer.h.\1.\2.weight"),
    (r"layer\.(\d+)\.(ln_1|ln_2)\.beta", r"transformer.h.\1.\2.bias"),
    (r"layer\.(\d+)\.attn\.wqkv", r"transformer.h.\1.attn.c_attn.weight"),
    (r"layer\.(\d+)\.attn\.bqkv", r"transformer.h.\1.attn.c_attn.bias"),
    (r"layer\.(\d+)\.attn\.wo", r"transformer.h.\1.attn.c_proj.weight"),
    (r"layer\.(\d+)\.attn\.bo", r"transformer.h.\1.attn.c_proj.bias"),
    (r"layer\.(\d+)\.mlp\.w1", r"transformer.h.\1.mlp.c_fc.weight"),
    (r"layer\.(\d+)\.mlp\.b1", r"transformer.h.\1.mlp.c_fc.bias"),
    (r"layer\.(\d+)\.mlp\.w2", r"transformer.h.\1.mlp.c_proj.weight"),
    (r"layer\.(\d+)\.mlp\.b2", r"transformer.h.\1.mlp.c_proj.bias"),
]


def hf_name(lmc_name):
    for pattern, repl in RULES:
        if re.fullmatch(pattern, lmc_name):
            return re.sub(pattern, repl, lmc_name)
    sys.exit(f"no HF name for LMC parameter '{lmc_name}'")


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--count", type=int, help="lmc's parameter count of GPT-2 small (the default config)")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    failures = 0
    if a.count is not None:
        n = sum(p.numel() for p in GPT2LMHeadModel(GPT2Config()).parameters())
        ok = n == a.count
        failures += not ok
        print(f"GPT-2 small: HF {n:,} parameters, lmc {a.count:,} {'ok' if ok else 'FAIL'}")

    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    layers = 1 + max(int(m.group(1)) for n in init for m in [re.match(r"layer\.(\d+)\.", n)] if m)
    vocab, d = init["wte"].shape
    config = GPT2Config(vocab_size=vocab, n_positions=init["wpe"].shape[0], n_embd=d, n_layer=layers,
                        n_head=a.heads, activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0, layer_norm_epsilon=1e-5, tie_word_embeddings=True,
                        attn_implementation="eager")
    model = GPT2LMHeadModel(config).float()
    hf_params = dict(model.named_parameters())  # lm_head.weight is wte's tensor: listed once
    names = {n: hf_name(n) for n in init}
    if sorted(names.values()) != sorted(hf_params):
        sys.exit("name map mismatch: HF has " + ", ".join(sorted(set(hf_params) - set(names.values()))))
    print(f"{len(names)} parameters mapped; LMC {sum(v.size for v in init.values()):,} numbers, "
          f"HF {sum(p.numel() for p in model.parameters()):,}")

    steps = sorted(glob.glob(os.path.join(a.dump, "step*.safetensors")),
                   key=lambda s: int(os.path.basename(s)[4:].split(".")[0]))
    if not steps:
        sys.exit("no step*.safetensors in " + a.dump)
    weights = init
    for k, path in enumerate(steps, 1):
        dump = safetensors_np.load(path)
        with torch.no_grad():
            for n, h in names.items():
                hf_params[h].copy_(torch.from_numpy(np.ascontiguousarray(weights[n])))
        model.zero_grad()
        tokens = torch.from_numpy(dump["tokens"].astype(np.int64))
        logits = model(input_ids=tokens[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        ok = e <= a.loss_rtol
        failures += not ok
        print(f"step {k}: loss lmc {float(dump['loss']):.8f} hf {loss.item():.8f} rel {e:.2e} {'ok' if ok else 'FAIL'}")
        worst = max((rel(dump["grad." + n], hf_params[h].grad.numpy()), n) for n, h in names.items())
        ok = worst[0] <= a.grad_rtol
        failures += not ok
        print(f"step {k}: {len(names)} gradients, max rel err {worst[0]:.2e} ({worst[1]}) {'ok' if ok else 'FAIL'}")
        weights = {n: dump["param." + n] for n in init}
    print("parity: " + ("ok" if failures == 0 else f"FAILED ({failures} checks)"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

"""Compares `lmrt run --dump-dir` of models/llama.lm with Hugging Face transformers'
LlamaForCausalLM (4.46.3) on the same weights and batches.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) are loaded into an HF model built from the same config through the name
map below (LMC stores a Linear's weight [in, out], HF [out, in]); HF's logits on
tokens[:, :-1] against tokens[:, 1:] give the loss, and autograd every parameter's
gradient. Tolerances: the loss to relative 1e-5, each gradient to relative 1e-4
(of its norm), in fp32.

Usage: llama_hf_parity.py --dump DIR --heads H --kv-heads G [--eps E] [--theta T]
"""
import argparse
import glob
import os
import re
import sys

import numpy as np
import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

# LMC parameter path -> (HF name, transposed?)
RULES = [
    (r"embed", "model.embed_tokens.weight", False),
    (r"head", "lm_head.weight", True),
    (r"norm\.gamma", "model.norm.weight", False),
    (r"layer\.(\d+)\.attn_norm\.gamma", r"model.layers.\1.input_layernorm.weight", False),
    (r"layer\.(\d+)\.mlp_norm\.gamma", r"model.layers.\1.post_attention_layernorm.weight", False),
    (r"layer\.(\d+)\.attn\.w([qkvo])", r"model.layers.\1.self_attn.\2_proj.weight", True),
    (r"layer\.(\d+)\.mlp\.w_(gate|up|down)", r"model.layers.\1.mlp.\2_proj.weight", True),
]


def hf_name(lmc_name):
    for pattern, repl, transposed in RULES:
        if re.fullmatch(pattern, lmc_name):
            return re.sub(pattern, repl, lmc_name), transposed
    sys.exit(f"no HF name for LMC parameter '{lmc_name}'")


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--kv-heads", type=int, required=True)
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--theta", type=float, default=10000.0)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")

    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    layers = 1 + max(int(m.group(1)) for n in init for m in [re.match(r"layer\.(\d+)\.", n)] if m)
    vocab, d = init["embed"].shape
    d_ff = init["layer.0.mlp.w_gate"].shape[1]
    config = LlamaConfig(vocab_size=vocab, hidden_size=d, intermediate_size=d_ff, num_hidden_layers=layers,
                         num_attention_heads=a.heads, num_key_value_heads=a.kv_heads, rms_norm_eps=a.eps,
                         rope_theta=a.theta, max_position_embeddings=4096, tie_word_embeddings=False,
                         attention_bias=False, mlp_bias=False, hidden_act="silu", attn_implementation="eager")
    model = LlamaForCausalLM(config).float()
    hf_params = dict(model.named_parameters())
    names = {n: hf_name(n) for n in init}
    if sorted(h for h, _ in names.values()) != sorted(hf_params):
        sys.exit("name map mismatch: HF has " + ", ".join(sorted(set(hf_params) - {h for h, _ in names.values()})))
    print(f"{len(names)} parameters mapped; LMC {sum(v.size for v in init.values()):,} numbers, "
          f"HF {sum(p.numel() for p in model.parameters()):,}")

    steps = sorted(glob.glob(os.path.join(a.dump, "step*.safetensors")),
                   key=lambda s: int(os.path.basename(s)[4:].split(".")[0]))
    if not steps:
        sys.exit("no step*.safetensors in " + a.dump)
    failures = 0
    weights = init
    for k, path in enumerate(steps, 1):
        dump = safetensors_np.load(path)
        with torch.no_grad():
            for n, (h, transposed) in names.items():
                w = torch.from_numpy(np.ascontiguousarray(weights[n].T if transposed else weights[n]))
                hf_params[h].copy_(w)
        model.zero_grad()
        tokens = torch.from_numpy(dump["tokens"].astype(np.int64))
        logits = model(input_ids=tokens[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        ok = e <= a.loss_rtol
        failures += not ok
        print(f"step {k}: loss lmc {float(dump['loss']):.8f} hf {loss.item():.8f} rel {e:.2e} {'ok' if ok else 'FAIL'}")
        errs = []
        for n, (h, transposed) in names.items():
            g = hf_params[h].grad.numpy()
            errs.append((rel(dump["grad." + n], g.T if transposed else g), n))
        worst = max(errs)
        ok = worst[0] <= a.grad_rtol
        failures += not ok
        print(f"step {k}: {len(errs)} gradients, max rel err {worst[0]:.2e} ({worst[1]}) {'ok' if ok else 'FAIL'}")
        weights = {n: dump["param." + n] for n in init}
    print("parity: " + ("ok" if failures == 0 else f"FAILED ({failures} checks)"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

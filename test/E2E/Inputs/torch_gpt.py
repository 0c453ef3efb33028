"""A PyTorch GPT-2 that reads LMC's parameter names: the numerical oracle for
models/gpt_tiny.lm and models/gpt2_small.lm (same math: pre-norm blocks, fused qkv,
causal attention, tanh GELU, tied output projection; weights stored [in, out])."""
import math

import torch
import torch.nn.functional as F


def layer_norm(x, p, prefix, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), p[prefix + ".gamma"], p[prefix + ".beta"], eps)


def attention(q, k, v, heads):
    B, T, D = q.shape
    dh = D // heads
    q, k, v = (t.view(B, T, heads, dh).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(dh)
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    att = att.masked_fill(~mask, float("-inf")).softmax(-1)
    return (att @ v).transpose(1, 2).reshape(B, T, D)


def gpt_logits(p, tokens, layers, heads):
    B, T = tokens.shape
    D = p["wte"].shape[1]
    h = p["wte"][tokens.long()] + p["wpe"][:T]
    for i in range(layers):
        s = f"layer.{i}"
        x = layer_norm(h, p, s + ".layernorm")
        qkv = x @ p[s + ".attn.wqkv"] + p[s + ".attn.bqkv"]
        y = attention(qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:], heads)
        h = h + (y @ p[s + ".attn.wo"] + p[s + ".attn.bo"])
        x = layer_norm(h, p, s + ".layernorm_1")
        m = F.gelu(x @ p[s + ".mlp.w1"] + p[s + ".mlp.b1"], approximate="tanh")
        h = h + (m @ p[s + ".mlp.w2"] + p[s + ".mlp.b2"])
    return layer_norm(h, p, "layernorm") @ p["wte"].t()


def causal_lm_loss(p, tokens, layers, heads):
    logits = gpt_logits(p, tokens[:, :-1], layers, heads)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1).long())

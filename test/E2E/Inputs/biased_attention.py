"""Inputs and the numpy reference for test/E2E/biased-attention.test (the model
`attn` of Inputs/biased_attention.lm: fused biased attention and the same written
out in the language).

  biased_attention.py make DIR     weights and inputs: two packed rows of 2 and 3
                                   documents, padding at the end of the second
  biased_attention.py check DIR    compares DIR/out.safetensors (fused, explicit)
                                   with numpy's softmax(q kᵀ + bias + masks) v
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

B, T, D, H = 2, 24, 16, 2


def make(d):
    rng = np.random.default_rng(11)
    w = {"wq": rng.normal(0, 0.3, (D, D)), "wk": rng.normal(0, 0.3, (D, D)), "wv": rng.normal(0, 0.3, (D, D)),
         "t5_bias.rel": rng.normal(0, 1.0, (9, H)), "w": rng.normal(0, 1.0, (D,))}
    safetensors_np.save(os.path.join(d, "w.safetensors"), {k: v.astype(np.float32) for k, v in w.items()})
    seg = np.array([[3] * 10 + [5] * 14, [1] * 7 + [2] * 9 + [4] * 8], np.int32)
    mask = np.ones((B, T), np.float32)
    mask[1, -3:] = 0  # padding inside the last document: its other tokens stay visible
    x = rng.normal(size=(B, T, D)).astype(np.float32)
    safetensors_np.save(os.path.join(d, "in.safetensors"), {"x": x, "seg": seg, "mask": mask})


def check(d):
    w = {k: v.astype(np.float64) for k, v in safetensors_np.load(os.path.join(d, "w.safetensors")).items()}
    inp = safetensors_np.load(os.path.join(d, "in.safetensors"))
    x = inp["x"].astype(np.float64)
    heads = lambda t: t.reshape(B, T, H, D // H).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = heads(x @ w["wq"]), heads(x @ w["wk"]), heads(x @ w["wv"])
    r = np.clip(np.arange(T)[None, :] - np.arange(T)[:, None], -4, 4) + 4
    bias = w["t5_bias.rel"][r].transpose(2, 0, 1)[None]  # [1, H, T, T]
    seen = (inp["seg"][:, :, None] == inp["seg"][:, None, :]) & (inp["mask"][:, None, :] != 0)
    s = q @ k.transpose(0, 1, 3, 2) + bias
    s = np.where(seen[:, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ref = (p @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    got = safetensors_np.load(os.path.join(d, "out.safetensors"))
    bad = 0
    for name in ("fused", "explicit"):
        err = float(np.abs(got[name] - ref).max())
        print(f"{name}: max err vs numpy {err:.1e} {'ok' if err < 1e-5 else 'FAIL'}")
        bad += err >= 1e-5
    err = float(np.abs(got["fused"] - got["explicit"]).max())
    print(f"fused vs explicit: max err {err:.1e} {'ok' if err < 1e-5 else 'FAIL'}")
    bad += err >= 1e-5
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])

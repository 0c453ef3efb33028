"""Checks the relative position buckets of models/blocks/t5.lm (compile-time
constants of index_constant, evaluated in f64) against HF's
T5Attention._relative_position_bucket (float32 log) for every query and key
position up to T: `lmrt forward` of Inputs/t5_buckets.lm returns them as floats,
bidirectional (the encoder's) and causal (the decoder's), 32 buckets, max
distance 128.

Usage: t5_buckets.py --plan PLAN --t T
"""
import argparse
import os
import sys

import numpy as np
import torch
from transformers.models.t5.modeling_t5 import T5Attention

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_common import lmrt_forward  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True)
    ap.add_argument("--t", type=int, required=True)
    a = ap.parse_args()
    out = lmrt_forward(a.plan, {}, {"x": np.zeros((1, a.t), np.float32)})
    pos = torch.arange(a.t)
    rel = pos[None, :] - pos[:, None]  # memory - context, as HF's compute_bias
    failures = 0
    for name, bidirectional in (("encoder", True), ("decoder", False)):
        hf = T5Attention._relative_position_bucket(rel, bidirectional=bidirectional, num_buckets=32,
                                                   max_distance=128).numpy()
        lmc = out[name][0].astype(np.int64)
        bad = int((lmc != hf).sum())
        failures += bad
        print(f"{name}: {a.t} x {a.t} buckets, {len(np.unique(hf))} distinct, {bad} differ from HF "
              f"{'ok' if bad == 0 else 'FAIL'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

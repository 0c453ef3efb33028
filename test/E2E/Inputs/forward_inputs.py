"""Inputs and numpy references for test/E2E/forward-inputs.test (models of
Inputs/two_models.lm: `tagger` of three inputs and two outputs, `scorer` sharing
its embeddings through shared = true).

  forward_inputs.py make DIR     weights and good and bad --inputs files
  forward_inputs.py check DIR    compares lmrt's outputs (DIR/tagger.safetensors,
                                 DIR/scorer.safetensors) with numpy's, to 1e-5
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402


def make(d):
    rng = np.random.default_rng(7)
    w = {"emb.word": rng.normal(size=(16, 8)), "emb.segment": rng.normal(size=(2, 8)),
         "w": rng.normal(size=(8, 3)), "v": rng.normal(size=(8, 1))}
    safetensors_np.save(os.path.join(d, "w.safetensors"), {k: v.astype(np.float32) for k, v in w.items()})
    ids = rng.integers(0, 16, size=(2, 4)).astype(np.int32)
    seg = np.array([[0, 0, 1, 1], [0, 1, 1, 0]], np.int32)
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.float32)
    good = {"ids": ids, "segments": seg, "mask": mask}
    save = lambda name, t: safetensors_np.save(os.path.join(d, name + ".safetensors"), t)  # noqa: E731
    save("in", good)
    save("ids", {"ids": ids})
    save("missing", {"ids": ids, "mask": mask})
    save("extra", dict(good, labels=ids))
    save("dtype", dict(good, mask=mask.astype(np.float64)))
    save("shape", dict(good, segments=seg[:, :3].copy()))
    save("range", dict(good, segments=seg * 2))
    save("negative", dict(good, ids=-ids - 1))


def check(d):
    w = safetensors_np.load(os.path.join(d, "w.safetensors"))
    x = safetensors_np.load(os.path.join(d, "in.safetensors"))
    h = w["emb.word"][x["ids"]] + w["emb.segment"][x["segments"]]
    want = {"tagger": {"tags": (h @ w["w"]) * x["mask"][:, :, None], "first": h[:, 0] @ w["w"]},
            "scorer": {"logits": (w["emb.word"][x["ids"]] @ w["v"])[:, :, 0]}}
    bad = 0
    for model, outs in want.items():
        got = safetensors_np.load(os.path.join(d, model + ".safetensors"))
        if sorted(got) != sorted(outs):
            print(f"{model}: outputs {sorted(got)}, expected {sorted(outs)}")
            bad += 1
            continue
        for name, ref in outs.items():
            err = float(np.abs(got[name] - ref).max())
            print(f"{model}: {name} {list(got[name].shape)} max err {err:.1e} {'ok' if err < 1e-5 else 'FAIL'}")
            bad += err >= 1e-5
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])

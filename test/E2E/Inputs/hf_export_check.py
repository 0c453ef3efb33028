"""Checks `lmrt weights export|import --format hf` against Hugging Face
transformers (4.46.3): what lmrt writes, from_pretrained loads, and what
save_pretrained writes, lmrt reads.

  tokens --out T.safetensors --shape B T --vocab V [--seed S]
      random token ids (i32 "tokens") for `lmrt forward`
  logits --dir DIR --class C --tokens T --logits L [--atol A]
      loads DIR with C.from_pretrained (strictly: no missing or unexpected
      tensors beyond the tied ones HF leaves out), runs it on T, and compares
      its logits with lmrt's (L, from `lmrt forward`): max |diff| <= A (1e-4)
  load --dir DIR --class C
      from_pretrained loads DIR strictly; prints the parameter count
  compare --logits A --out B [--atol A]
      two logits files (lmrt's and HF's save) agree: max |diff| <= A
  train --dir DIR --class C --out OUT --tokens T [--steps N]
      loads DIR, trains N steps of causal LM with SGD in PyTorch on T (so the
      weights are HF's own), save_pretrained(OUT), and writes OUT/logits.safetensors
      (HF's logits of the trained model on T) for the import test
"""
import argparse
import os
import sys

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402


def load(directory, cls_name):
    cls = getattr(transformers, cls_name)
    model, info = cls.from_pretrained(directory, attn_implementation="eager", output_loading_info=True)
    tied = set(getattr(model, "_tied_weights_keys", None) or [])
    missing = [k for k in info["missing_keys"] if not any(k.endswith(t) or t.endswith(k) for t in tied)]
    problems = {"missing": missing, "unexpected": info["unexpected_keys"], "mismatched": info["mismatched_keys"],
                "errors": info["error_msgs"]}
    if any(problems.values()):
        sys.exit(f"from_pretrained({directory}) with {cls_name}: {problems}")
    return model.float().eval()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["tokens", "logits", "load", "train", "compare"])
    ap.add_argument("--dir")
    ap.add_argument("--class", dest="cls")
    ap.add_argument("--tokens")
    ap.add_argument("--logits")
    ap.add_argument("--out")
    ap.add_argument("--shape", type=int, nargs=2)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--atol", type=float, default=1e-4)
    a = ap.parse_args()

    if a.mode == "tokens":
        rng = np.random.default_rng(a.seed)
        ids = rng.integers(0, a.vocab, size=a.shape).astype(np.int32)
        safetensors_np.save(a.out, {"tokens": ids})
        return

    if a.mode == "compare":
        x, y = (safetensors_np.load(p)["logits"].astype(np.float64) for p in (a.logits, a.out))
        err = float(np.abs(x - y).max()) if x.shape == y.shape else float("inf")
        ok = err <= a.atol
        print(f"logits {list(x.shape)}: max |diff| {err:.2e} (atol {a.atol:g}) {'ok' if ok else 'FAIL'}")
        sys.exit(0 if ok else 1)

    print(f"transformers {transformers.__version__}")
    model = load(a.dir, a.cls)
    n = sum(p.numel() for p in model.parameters())
    print(f"{a.cls} loaded from {os.path.basename(a.dir)}: {n:,} parameters")
    if a.mode == "load":
        return

    tokens = torch.from_numpy(safetensors_np.load(a.tokens)["tokens"].astype(np.int64))
    if a.mode == "logits":
        with torch.no_grad():
            hf = model(input_ids=tokens).logits.numpy()
        lmrt = safetensors_np.load(a.logits)["logits"]
        if hf.shape != lmrt.shape:
            sys.exit(f"logits: HF {hf.shape}, lmrt {lmrt.shape}")
        err = float(np.abs(hf.astype(np.float64) - lmrt).max())
        ok = err <= a.atol
        print(f"logits {list(hf.shape)}: max |hf - lmrt| {err:.2e} (atol {a.atol:g}) {'ok' if ok else 'FAIL'}")
        sys.exit(0 if ok else 1)

    # train: a few SGD steps of causal LM in HF, so the weights differ from the export.
    torch.manual_seed(a.seed)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for step in range(a.steps):
        opt.zero_grad()
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        opt.step()
        print(f"hf step {step + 1}: loss {loss.item():.4f}")
    model.eval()
    model.save_pretrained(a.out)
    with torch.no_grad():
        logits = model(input_ids=tokens).logits.numpy()
    safetensors_np.save(os.path.join(a.out, "logits.safetensors"), {"logits": logits})
    print(f"saved {os.path.basename(a.out)}: {sorted(os.listdir(a.out))}")


if __name__ == "__main__":
    main()

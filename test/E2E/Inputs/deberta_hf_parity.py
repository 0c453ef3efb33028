"""Compares `lmrt run --dump-dir` of models/deberta.lm with Hugging Face transformers'
DebertaForMaskedLM (4.46.3) on the same weights and batches.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) are loaded into an HF model built from the same config through the name
map below (LMC stores a Linear's weight [in, out], HF [out, in]; the fused q/k/v
projection in_proj has the same per-head column order on both sides). The dumped
batch of the mlm transform (ids, labels with -100, attention_mask) goes to HF as
input_ids, labels and attention_mask, and HF's loss and autograd's gradients are
compared with LMC's: the loss to relative 1e-5, each gradient to relative 1e-4 (of
its norm, or of 1e-6 of the largest gradient's norm where it is smaller), in fp32.

The HF config is DeBERTa's: relative_attention, pos_att_type c2p|p2c,
position_biased_input false, type_vocab_size 0, max_relative_positions -1 (so k is
max_position_embeddings, here the rows of LMC's relative table / 2), layer norm eps
1e-7; dropout 0; pad_token_id = 256 (the mlm transform's [PAD]). GELU is the tanh
form (HF's "gelu_new"), LMC's gelu: DeBERTa's own is erf GELU ("gelu").

With --probe (the dump of Inputs/deberta_logits.lm) the loss is not the MLM loss
but sum(logits * r) / (batch * seq) with r = sin(0.7 * flat index) over [batch,
seq, vocab] (the .lm's own definition): a random projection of every logit, so
the logits are compared at every position, and the gradients are those of that
projection.

Usage: deberta_hf_parity.py --dump DIR --heads H [--probe]
"""
import argparse
import glob
import os
import re
import sys

import numpy as np
import torch
import transformers
from transformers import DebertaConfig, DebertaForMaskedLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

L = r"deberta\.layer\.(\d+)\."
H = r"deberta.encoder.layer.\1."
# LMC parameter path -> (HF name, transposed?)
RULES = [
    (r"deberta\.word", "deberta.embeddings.word_embeddings.weight", False),
    (r"deberta\.rel_embeddings", "deberta.encoder.rel_embeddings.weight", False),
    (r"deberta\.embed_ln\.gamma", "deberta.embeddings.LayerNorm.weight", False),
    (r"deberta\.embed_ln\.beta", "deberta.embeddings.LayerNorm.bias", False),
    (L + r"attention\.in_proj", H + "attention.self.in_proj.weight", True),
    (L + r"attention\.(q_bias|v_bias)", H + r"attention.self.\2", False),
    (L + r"attention\.pos_proj", H + "attention.self.pos_proj.weight", True),
    (L + r"attention\.pos_q_proj\.w", H + "attention.self.pos_q_proj.weight", True),
    (L + r"attention\.pos_q_proj\.b", H + "attention.self.pos_q_proj.bias", False),
    (L + r"attention\.output\.w", H + "attention.output.dense.weight", True),
    (L + r"attention\.output\.b", H + "attention.output.dense.bias", False),
    (L + r"attention_ln\.gamma", H + "attention.output.LayerNorm.weight", False),
    (L + r"attention_ln\.beta", H + "attention.output.LayerNorm.bias", False),
    (L + r"intermediate\.w", H + "intermediate.dense.weight", True),
    (L + r"intermediate\.b", H + "intermediate.dense.bias", False),
    (L + r"output\.w", H + "output.dense.weight", True),
    (L + r"output\.b", H + "output.dense.bias", False),
    (L + r"output_ln\.gamma", H + "output.LayerNorm.weight", False),
    (L + r"output_ln\.beta", H + "output.LayerNorm.bias", False),
    (r"cls\.transform\.w", "cls.predictions.transform.dense.weight", True),
    (r"cls\.transform\.b", "cls.predictions.transform.dense.bias", False),
    (r"cls\.ln\.gamma", "cls.predictions.transform.LayerNorm.weight", False),
    (r"cls\.ln\.beta", "cls.predictions.transform.LayerNorm.bias", False),
    (r"cls\.bias", "cls.predictions.bias", False),
]


def hf_name(lmc_name):
    for pattern, repl, transposed in RULES:
        if re.fullmatch(pattern, lmc_name):
            return re.sub(pattern, repl, lmc_name), transposed
    sys.exit(f"no HF name for LMC parameter '{lmc_name}'")


def rel(a, b, floor=1e-30):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), floor))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--eps", type=float, default=1e-7)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--probe", action="store_true", help="the loss is deberta_logits.lm's projection of the logits")
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")

    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    layers = 1 + max(int(g.group(1)) for n in init for g in [re.match(r"deberta\.layer\.(\d+)\.", n)] if g)
    vocab, d = init["deberta.word"].shape
    d_ff = init["deberta.layer.0.intermediate.w"].shape[1]
    k = init["deberta.rel_embeddings"].shape[0] // 2
    config = DebertaConfig(vocab_size=vocab, hidden_size=d, num_hidden_layers=layers, num_attention_heads=a.heads,
                           intermediate_size=d_ff, hidden_act="gelu_new", hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, max_position_embeddings=k, relative_attention=True,
                           max_relative_positions=-1, pos_att_type="c2p|p2c", position_biased_input=False,
                           type_vocab_size=0, layer_norm_eps=a.eps, pad_token_id=256)
    model = DebertaForMaskedLM(config).float()
    model.train()  # dropout is 0: train mode changes nothing but is what training runs
    hf_params = dict(model.named_parameters())
    names = {n: hf_name(n) for n in init}
    if sorted(h for h, _ in names.values()) != sorted(hf_params):
        mapped = {h for h, _ in names.values()}
        sys.exit("name map mismatch: HF only " + ", ".join(sorted(set(hf_params) - mapped)) +
                 "; LMC only " + ", ".join(sorted(mapped - set(hf_params))))
    print(f"{len(names)} parameters mapped; LMC {sum(v.size for v in init.values()):,} numbers, "
          f"HF {sum(p.numel() for p in model.parameters()):,}")

    steps = sorted(glob.glob(os.path.join(a.dump, "step*.safetensors")),
                   key=lambda s: int(os.path.basename(s)[4:].split(".")[0]))
    if not steps:
        sys.exit("no step*.safetensors in " + a.dump)
    failures = 0
    weights = init
    for step, path in enumerate(steps, 1):
        dump = safetensors_np.load(path)
        with torch.no_grad():
            for n, (h, transposed) in names.items():
                w = torch.from_numpy(np.ascontiguousarray(weights[n].T if transposed else weights[n]))
                hf_params[h].copy_(w)
        model.zero_grad()
        pad = int((dump["attention_mask"] == 0).sum())
        masked = int((dump["labels"] != -100).sum()) if "labels" in dump else 0
        ids = torch.from_numpy(dump["ids"].astype(np.int64))
        mask = torch.from_numpy(dump["attention_mask"].astype(np.float32))
        if a.probe:
            logits = model(input_ids=ids, attention_mask=mask).logits
            b, t, v = logits.shape
            r = torch.sin(torch.arange(b * t * v, dtype=torch.float32) * torch.tensor(0.7, dtype=torch.float32))
            loss = (logits * r.reshape(b, t, v)).sum() / (b * t)
        else:
            loss = model(input_ids=ids, attention_mask=mask,
                         labels=torch.from_numpy(dump["labels"].astype(np.int64))).loss
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        ok = e <= a.loss_rtol
        failures += not ok
        what = "logits probe" if a.probe else f"{masked} masked"
        print(f"step {step}: {what}, {pad} padding positions; loss lmc {float(dump['loss']):.8f} "
              f"hf {loss.item():.8f} rel {e:.2e} {'ok' if ok else 'FAIL'}")
        # A gradient whose norm is below 1e-6 of the largest one's is compared
        # against that floor (rounding noise where the exact value is ~0).
        floor = 1e-6 * max(float(np.linalg.norm(p.grad.numpy())) for p in hf_params.values())
        errs = []
        for n, (h, transposed) in names.items():
            g = hf_params[h].grad.numpy()
            errs.append((rel(dump["grad." + n], g.T if transposed else g, floor), n))
        worst = max(errs)
        ok = worst[0] <= a.grad_rtol
        failures += not ok
        print(f"step {step}: {len(errs)} gradients, max rel err {worst[0]:.2e} ({worst[1]}) {'ok' if ok else 'FAIL'}")
        weights = {n: dump["param." + n] for n in init}
    print("parity: " + ("ok" if failures == 0 else f"FAILED ({failures} checks)"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

"""Compares `lmrt run --dump-dir` of models/bert.lm with Hugging Face transformers'
BertForPreTraining (4.46.3) on the same weights and batches, or (--model roberta)
models/roberta.lm with RobertaForMaskedLM.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) are loaded into an HF model built from the same config through the name
map below (LMC stores a Linear's weight [in, out], HF [out, in]). The dumped batch
of the mlm transform (ids, labels with -100, segments, attention_mask, nsp_labels)
goes to HF as input_ids, labels, token_type_ids, attention_mask and
next_sentence_label, and HF's loss (MLM + NSP) and autograd's gradients are
compared with LMC's: the loss to relative 1e-5, each gradient to relative 1e-4 (of
its norm, or of 1e-6 of the largest gradient's norm where it is smaller: the key
biases' gradient is zero in exact arithmetic), in fp32. GELU is the tanh form (HF's "gelu_new", the original BERT code's),
dropout 0, eager attention, pad_token_id = 256 (the mlm transform's [PAD]: HF's
embedding gives that row no gradient from the lookup; LMC's pad positions give it 0).

RoBERTa: no segments or pair labels; HF gets position_ids = 2 + arange(T), the
positions of unpadded rows with fairseq's padding_idx + 1 offset (the rows of the
mlm transform without short_seq_prob are never padded), and MLM loss alone.

Usage: bert_hf_parity.py --dump DIR --heads H [--eps E] [--model bert|roberta]
"""
import argparse
import glob
import os
import re
import sys

import numpy as np
import torch
import transformers
from transformers import BertConfig, BertForPreTraining, RobertaConfig, RobertaForMaskedLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

L = r"bert\.layer\.(\d+)\."
H = r"bert.encoder.layer.\1."
# LMC parameter path -> (HF name, transposed?)
RULES = [
    (r"bert\.word", "bert.embeddings.word_embeddings.weight", False),
    (r"bert\.position", "bert.embeddings.position_embeddings.weight", False),
    (r"bert\.segment", "bert.embeddings.token_type_embeddings.weight", False),
    (r"bert\.embed_ln\.gamma", "bert.embeddings.LayerNorm.weight", False),
    (r"bert\.embed_ln\.beta", "bert.embeddings.LayerNorm.bias", False),
    (L + r"attention\.(query|key|value)\.w", H + r"attention.self.\2.weight", True),
    (L + r"attention\.(query|key|value)\.b", H + r"attention.self.\2.bias", False),
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
    (r"pooler\.w", "bert.pooler.dense.weight", True),
    (r"pooler\.b", "bert.pooler.dense.bias", False),
    (r"mlm\.transform\.w", "cls.predictions.transform.dense.weight", True),
    (r"mlm\.transform\.b", "cls.predictions.transform.dense.bias", False),
    (r"mlm\.ln\.gamma", "cls.predictions.transform.LayerNorm.weight", False),
    (r"mlm\.ln\.beta", "cls.predictions.transform.LayerNorm.bias", False),
    (r"mlm\.bias", "cls.predictions.bias", False),
    (r"nsp\.w", "cls.seq_relationship.weight", True),
    (r"nsp\.b", "cls.seq_relationship.bias", False),
]


# RoBERTa: the same encoder under roberta.*, its head under lm_head.*.
ROBERTA_RULES = [(p.replace(r"bert\.", r"roberta\.", 1) if p.startswith(r"bert\.") else p,
                  h.replace("bert.", "roberta.", 1), t) for p, h, t in RULES[:17]] + [
    (r"lm_head\.transform\.w", "lm_head.dense.weight", True),
    (r"lm_head\.transform\.b", "lm_head.dense.bias", False),
    (r"lm_head\.ln\.gamma", "lm_head.layer_norm.weight", False),
    (r"lm_head\.ln\.beta", "lm_head.layer_norm.bias", False),
    (r"lm_head\.bias", "lm_head.bias", False),
]


def hf_name(lmc_name, rules=RULES):
    for pattern, repl, transposed in rules:
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
    ap.add_argument("--eps", type=float, default=None, help="layer norm eps (BERT 1e-12, RoBERTa 1e-5)")
    ap.add_argument("--model", choices=["bert", "roberta"], default="bert")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")

    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    m = a.model
    rules = RULES if m == "bert" else ROBERTA_RULES
    eps = a.eps if a.eps is not None else (1e-12 if m == "bert" else 1e-5)
    layers = 1 + max(int(g.group(1)) for n in init for g in [re.match(m + r"\.layer\.(\d+)\.", n)] if g)
    vocab, d = init[m + ".word"].shape
    d_ff = init[m + ".layer.0.intermediate.w"].shape[1]
    ctx = init[m + ".position"].shape[0]
    Config, Model = (BertConfig, BertForPreTraining) if m == "bert" else (RobertaConfig, RobertaForMaskedLM)
    config = Config(vocab_size=vocab, hidden_size=d, num_hidden_layers=layers, num_attention_heads=a.heads,
                    intermediate_size=d_ff, hidden_act="gelu_new", hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0, max_position_embeddings=ctx,
                    type_vocab_size=init[m + ".segment"].shape[0], layer_norm_eps=eps,
                    pad_token_id=256 if m == "bert" else 1, attn_implementation="eager")
    model = Model(config).float()
    if m == "roberta":
        # RoBERTa's pad id 1 is also its position table's padding row (never read:
        # positions start at 2); the word embedding's padding row is our [PAD].
        model.roberta.embeddings.word_embeddings.padding_idx = 256
    model.train()  # dropout is 0: train mode changes nothing but is what training runs
    hf_params = dict(model.named_parameters())
    names = {n: hf_name(n, rules) for n in init}
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
    for k, path in enumerate(steps, 1):
        dump = safetensors_np.load(path)
        with torch.no_grad():
            for n, (h, transposed) in names.items():
                w = torch.from_numpy(np.ascontiguousarray(weights[n].T if transposed else weights[n]))
                hf_params[h].copy_(w)
        model.zero_grad()
        t = lambda key: torch.from_numpy(dump[key].astype(np.int64))  # noqa: E731
        pad = int((dump["attention_mask"] == 0).sum())
        masked = int((dump["labels"] != -100).sum())
        mask = torch.from_numpy(dump["attention_mask"].astype(np.float32))
        if m == "bert":
            out = model(input_ids=t("ids"), token_type_ids=t("segments"), attention_mask=mask,
                        labels=t("labels"), next_sentence_label=t("nsp_labels"))
        else:
            ids = t("ids")
            positions = 2 + torch.arange(ids.shape[1]).expand_as(ids)
            out = model(input_ids=ids, position_ids=positions, attention_mask=mask, labels=t("labels"))
        loss = out.loss
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        ok = e <= a.loss_rtol
        failures += not ok
        print(f"step {k}: {masked} masked, {pad} padding positions; loss lmc {float(dump['loss']):.8f} "
              f"hf {loss.item():.8f} rel {e:.2e} {'ok' if ok else 'FAIL'}")
        # The key biases' gradient is zero in exact arithmetic (softmax ignores a
        # shift of every score of a row), so both sides hold rounding noise ~1e-12:
        # a norm below 1e-6 of the largest gradient's is compared against that floor.
        floor = 1e-6 * max(float(np.linalg.norm(p.grad.numpy())) for p in hf_params.values())
        errs = []
        for n, (h, transposed) in names.items():
            g = hf_params[h].grad.numpy()
            errs.append((rel(dump["grad." + n], g.T if transposed else g, floor), n))
        worst = max(errs)
        ok = worst[0] <= a.grad_rtol
        failures += not ok
        print(f"step {k}: {len(errs)} gradients, max rel err {worst[0]:.2e} ({worst[1]}) {'ok' if ok else 'FAIL'}")
        weights = {n: dump["param." + n] for n in init}
    print("parity: " + ("ok" if failures == 0 else f"FAILED ({failures} checks)"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

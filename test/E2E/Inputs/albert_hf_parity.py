"""Compares `lmrt run --dump-dir` of models/albert.lm with Hugging Face transformers'
AlbertForPreTraining (4.46.3) on the same weights and batches.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) are loaded into an HF model built from the same config through the name
map below (LMC stores a Linear's weight [in, out], HF [out, in]). ALBERT shares one
layer's weights across all layers: LMC's albert.layer.* is HF's one layer group
albert.encoder.albert_layer_groups.0.albert_layers.0.*, so the gradients compared
are each the sum over every layer that uses the weight. The dumped batch of the mlm
transform with sop (ids, labels with -100, segments, attention_mask, sop_labels)
goes to HF as input_ids, labels, token_type_ids, attention_mask and
sentence_order_label, and HF's loss (MLM + SOP) and autograd's gradients are
compared with LMC's: the loss to relative 1e-5, each gradient to relative 1e-4 (of
its norm, or of 1e-6 of the largest gradient's norm where it is smaller: the key
biases' gradient is zero in exact arithmetic), in fp32. GELU is the tanh form
("gelu_new", ALBERT's default), dropout 0, eager attention, pad_token_id = 256 (the
mlm transform's [PAD]).

Usage: albert_hf_parity.py --dump DIR --heads H [--eps E]
"""
import argparse
import glob
import os
import re
import sys

import numpy as np
import torch
import transformers
from transformers import AlbertConfig, AlbertForPreTraining

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

H = "albert.encoder.albert_layer_groups.0.albert_layers.0."
# LMC parameter path -> (HF name, transposed?)
RULES = [
    (r"albert\.word", "albert.embeddings.word_embeddings.weight", False),
    (r"albert\.position", "albert.embeddings.position_embeddings.weight", False),
    (r"albert\.segment", "albert.embeddings.token_type_embeddings.weight", False),
    (r"albert\.embed_ln\.gamma", "albert.embeddings.LayerNorm.weight", False),
    (r"albert\.embed_ln\.beta", "albert.embeddings.LayerNorm.bias", False),
    (r"albert\.embed_proj\.w", "albert.encoder.embedding_hidden_mapping_in.weight", True),
    (r"albert\.embed_proj\.b", "albert.encoder.embedding_hidden_mapping_in.bias", False),
    (r"albert\.layer\.attention\.(query|key|value)\.w", H + r"attention.\1.weight", True),
    (r"albert\.layer\.attention\.(query|key|value)\.b", H + r"attention.\1.bias", False),
    (r"albert\.layer\.attention\.output\.w", H + "attention.dense.weight", True),
    (r"albert\.layer\.attention\.output\.b", H + "attention.dense.bias", False),
    (r"albert\.layer\.attention_ln\.gamma", H + "attention.LayerNorm.weight", False),
    (r"albert\.layer\.attention_ln\.beta", H + "attention.LayerNorm.bias", False),
    (r"albert\.layer\.intermediate\.w", H + "ffn.weight", True),
    (r"albert\.layer\.intermediate\.b", H + "ffn.bias", False),
    (r"albert\.layer\.output\.w", H + "ffn_output.weight", True),
    (r"albert\.layer\.output\.b", H + "ffn_output.bias", False),
    (r"albert\.layer\.output_ln\.gamma", H + "full_layer_layer_norm.weight", False),
    (r"albert\.layer\.output_ln\.beta", H + "full_layer_layer_norm.bias", False),
    (r"pooler\.w", "albert.pooler.weight", True),
    (r"pooler\.b", "albert.pooler.bias", False),
    (r"mlm\.transform\.w", "predictions.dense.weight", True),
    (r"mlm\.transform\.b", "predictions.dense.bias", False),
    (r"mlm\.ln\.gamma", "predictions.LayerNorm.weight", False),
    (r"mlm\.ln\.beta", "predictions.LayerNorm.bias", False),
    (r"mlm\.bias", "predictions.bias", False),
    (r"sop\.w", "sop_classifier.classifier.weight", True),
    (r"sop\.b", "sop_classifier.classifier.bias", False),
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
    ap.add_argument("--layers", type=int, required=True, help="how many times the shared layer runs")
    ap.add_argument("--eps", type=float, default=1e-12)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")

    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    vocab, e = init["albert.word"].shape
    d = init["albert.embed_proj.w"].shape[1]
    d_ff = init["albert.layer.intermediate.w"].shape[1]
    config = AlbertConfig(vocab_size=vocab, embedding_size=e, hidden_size=d, num_hidden_layers=a.layers,
                          num_hidden_groups=1, inner_group_num=1, num_attention_heads=a.heads,
                          intermediate_size=d_ff, hidden_act="gelu_new", hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0,
                          max_position_embeddings=init["albert.position"].shape[0],
                          type_vocab_size=init["albert.segment"].shape[0], layer_norm_eps=a.eps,
                          pad_token_id=256, attn_implementation="eager")
    model = AlbertForPreTraining(config).float()
    model.train()  # dropout is 0: train mode changes nothing but is what training runs
    hf_params = dict(model.named_parameters())
    names = {n: hf_name(n) for n in init}
    if sorted(h for h, _ in names.values()) != sorted(hf_params):
        mapped = {h for h, _ in names.values()}
        sys.exit("name map mismatch: HF only " + ", ".join(sorted(set(hf_params) - mapped)) +
                 "; LMC only " + ", ".join(sorted(mapped - set(hf_params))))
    print(f"{len(names)} parameters mapped; LMC {sum(v.size for v in init.values()):,} numbers, "
          f"HF {sum(p.numel() for p in model.parameters()):,}; {a.layers} layers share one")

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
        swapped = int(dump["sop_labels"].sum())
        mask = torch.from_numpy(dump["attention_mask"].astype(np.float32))
        out = model(input_ids=t("ids"), token_type_ids=t("segments"), attention_mask=mask,
                    labels=t("labels"), sentence_order_label=t("sop_labels"))
        loss = out.loss
        loss.backward()
        err = rel(float(dump["loss"]), loss.item())
        ok = err <= a.loss_rtol
        failures += not ok
        print(f"step {k}: {masked} masked, {pad} padding positions, {swapped} of {len(dump['sop_labels'])} "
              f"pairs swapped; loss lmc {float(dump['loss']):.8f} hf {loss.item():.8f} rel {err:.2e} "
              f"{'ok' if ok else 'FAIL'}")
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

"""Compares `lmrt run --dump-dir` of models/bert.lm with Hugging Face transformers'
BertForPreTraining (4.46.3) on the same weights and batches, or (--model roberta)
models/roberta.lm with RobertaForMaskedLM.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) go through `lmrt weights export --format hf` (the name map, transposes,
ties and config.json of the model file's `export hf` section, see hf_export.py):
from_pretrained builds the HF model from the first export, later ones are copied
in, and LMC's gradients are exported the same way to compare by HF name. The dumped batch
of the mlm transform (ids, labels with -100, segments, attention_mask, nsp_labels)
goes to HF as input_ids, labels, token_type_ids, attention_mask and
next_sentence_label, and HF's loss (MLM + NSP) and autograd's gradients are
compared with LMC's: the loss to relative 1e-5, each gradient to relative 1e-4 (of
its norm, or of 1e-6 of the largest gradient's norm where it is smaller: the key
biases' gradient is zero in exact arithmetic), in fp32. GELU is the tanh form (HF's "gelu_new", the original BERT code's),
dropout 0, eager attention, pad_token_id = 256 (the mlm transform's [PAD]: HF's
embedding gives that row no gradient from the lookup; LMC's pad positions give it 0).
Each step also runs the model's forward program (`lmrt forward --inputs`) on the
dumped batch with that step's weights and compares its logits with HF's
(relative 1e-4): BertForPreTraining's prediction_logits and
seq_relationship_logits (LMC: mlm_logits, nsp_logits), RobertaForMaskedLM's logits.

RoBERTa: no segments or pair labels; HF gets position_ids = 2 + arange(T), the
positions of unpadded rows with fairseq's padding_idx + 1 offset (the rows of the
mlm transform without short_seq_prob are never padded), and MLM loss alone.

Usage: bert_hf_parity.py --dump DIR --plan PLAN [--model bert|roberta]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_common import Checks, check_grads, compare_logits, grad_floor, hf_model, lmrt_forward, parity_args, print_mapped, rel, step_weights, steps  # noqa: E402


def main():
    ap = parity_args()
    ap.add_argument("--model", choices=["bert", "roberta"], default="bert")
    a = ap.parse_args()
    m = a.model
    init, ex, model, hf_params = hf_model(a, "BertForPreTraining" if m == "bert" else "RobertaForMaskedLM")
    if m == "roberta":
        # RoBERTa's pad id 1 is also its position table's padding row (never read:
        # positions start at 2); the word embedding's padding row is our [PAD].
        model.roberta.embeddings.word_embeddings.padding_idx = 256
    print_mapped(init, model)

    checks = Checks()
    weights = init
    for k, dump in steps(a.dump):
        ex.copy_into(model, ex.export(weights))
        model.zero_grad()
        t = lambda key: torch.from_numpy(dump[key].astype(np.int64))  # noqa: E731
        pad = int((dump["attention_mask"] == 0).sum())
        masked = int((dump["labels"] != -100).sum())
        mask = torch.from_numpy(dump["attention_mask"].astype(np.float32))
        if m == "bert":
            out = model(input_ids=t("ids"), token_type_ids=t("segments"), attention_mask=mask,
                        labels=t("labels"), next_sentence_label=t("nsp_labels"))
            hf_logits = {"mlm_logits": out.prediction_logits, "nsp_logits": out.seq_relationship_logits}
            inputs = ["ids", "segments", "attention_mask"]
        else:
            ids = t("ids")
            positions = 2 + torch.arange(ids.shape[1]).expand_as(ids)
            out = model(input_ids=ids, position_ids=positions, attention_mask=mask, labels=t("labels"))
            hf_logits = {"logits": out.logits}
            inputs = ["ids", "attention_mask"]
        loss = out.loss
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: {masked} masked, {pad} padding positions; loss lmc "
                     f"{float(dump['loss']):.8f} hf {loss.item():.8f} rel {e:.2e}")
        grads = ex.export({n: dump["grad." + n] for n in init})
        check_grads(checks, k, grads, hf_params, a.grad_rtol, grad_floor(hf_params))
        # The model alone (the plan's forward program) on the same batch and weights.
        lmc = lmrt_forward(a.plan, weights, {n: dump[n] for n in inputs})
        compare_logits(checks, k, lmc, {n: v.detach().numpy() for n, v in hf_logits.items()}, a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

"""Compares `lmrt run --dump-dir` of models/finetune/bert_span.lm with Hugging
Face transformers' BertForQuestionAnswering (4.46.3) on the same weights and
batches, or (--model gpt2) models/finetune/gpt_span.lm with
GPT2ForQuestionAnswering, or (--model llama) models/finetune/llama_span.lm with
LlamaForQuestionAnswering.

LMC's weights before each dumped step go to HF through `lmrt weights export
--format hf` (bert_span.lm's `export hf` map, hf_export.py), as in
bert_hf_parity.py. The dumped batch of the span transform (ids, segments,
attention_mask, start_positions, end_positions) goes to HF as input_ids,
token_type_ids, attention_mask, start_positions and end_positions; HF's loss
(the mean of the start and the end cross-entropy) must match LMC's to relative
1e-5 and every gradient to relative 1e-4 (of its norm, with the floor of
grad_floor). Two gradients are zero in exact arithmetic: qa_outputs' bias and
the last layer's output LayerNorm bias each receive the sum over a row's
positions of softmax - one-hot, which is 0; both sides hold rounding noise
there (~1e-8), so those two are checked to be below 1e-6 of the largest
gradient's norm on both sides instead. HF's word embedding has padding_idx =
[PAD] (256), which drops that row's gradient; the QA loss's softmax runs over
every position, padding included (HF masks no logits), so the row has a
gradient in exact arithmetic, which LMC keeps: the script sets padding_idx to
None, and HF computes it too.

GPT-2: HF's word table has the 256 bytes, so the ids 256..258 ([CLS], [SEP],
[PAD]) go to it as the newline (10), as gpt_span.lm reads them; no attention
mask goes to HF, as gpt_span.lm reads none (padding follows the text, so
causal attention keeps it from every real position, and the padding
positions' own logits, which the loss's softmax reads, see what LMC's see).
The zero gradients are qa_outputs' bias and ln_f's bias. The script prints how many rows point at [CLS] (an answer cut
off) and how many positions are padding, so both are seen to be exercised.
LLaMA: as GPT-2 (the ids 256..258 as the newline, no attention mask, so
HF's causal mask and RoPE at positions 0..T-1); RMSNorm has no bias, so the
one gradient zero in exact arithmetic is qa_outputs' bias.
Each step also runs the plan's forward program (`lmrt forward --inputs`) and
compares its [B, T, 2] logits with HF's start_logits and end_logits stacked on
the last axis (relative 1e-4).

Usage: span_hf_parity.py --dump DIR --plan PLAN [--model bert|gpt2|llama]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_common import Checks, check_grads, compare_logits, grad_floor, hf_model, lmrt_forward, parity_args, print_mapped, rel, step_weights, steps  # noqa: E402


def main():
    ap = parity_args()
    ap.add_argument("--model", choices=["bert", "gpt2", "llama"], default="bert")
    a = ap.parse_args()
    bert = a.model == "bert"
    cls = {"bert": "BertForQuestionAnswering", "gpt2": "GPT2ForQuestionAnswering", "llama": "LlamaForQuestionAnswering"}
    init, ex, model, hf_params = hf_model(a, cls[a.model])
    if bert:
        model.bert.embeddings.word_embeddings.padding_idx = None
        last = model.config.num_hidden_layers - 1
        zero = {"qa_outputs.bias", f"bert.encoder.layer.{last}.output.LayerNorm.bias"}
    elif a.model == "gpt2":
        zero = {"qa_outputs.bias", "transformer.ln_f.bias"}
    else:
        zero = {"qa_outputs.bias"}
    print_mapped(init, model)
    checks = Checks()
    weights = init
    for k, dump in steps(a.dump):
        ex.copy_into(model, ex.export(weights))
        model.zero_grad()
        t = lambda key: torch.from_numpy(dump[key].astype(np.int64))  # noqa: E731
        positions = dict(start_positions=t("start_positions"), end_positions=t("end_positions"))
        if bert:
            mask = torch.from_numpy(dump["attention_mask"].astype(np.float32))
            out = model(input_ids=t("ids"), token_type_ids=t("segments"), attention_mask=mask, **positions)
        else:
            out = model(input_ids=torch.where(t("ids") >= 256, 10, t("ids")), **positions)
        out.loss.backward()
        cut = int((dump["start_positions"] == 0).sum())
        pad = int((dump["ids"] == 256).sum())  # [PAD]
        e = rel(float(dump["loss"]), out.loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: {cut} answers cut off, {pad} padding positions; loss lmc "
                     f"{float(dump['loss']):.8f} hf {out.loss.item():.8f} rel {e:.2e}")
        grads = ex.export({n: dump["grad." + n] for n in init})
        floor = grad_floor(hf_params)
        check_grads(checks, k, {n: g for n, g in grads.items() if n not in zero}, hf_params, a.grad_rtol, floor)
        worst = max(max(np.linalg.norm(grads[n]), np.linalg.norm(hf_params[n].grad.numpy())) for n in zero)
        checks.check(worst <= floor, f"step {k}: {len(zero)} gradients zero in exact arithmetic, largest norm "
                     f"{worst:.1e} (at most {floor:.1e})")
        inputs = ("ids", "segments", "attention_mask") if bert else ("ids",)
        lmc = lmrt_forward(a.plan, weights, {n: dump[n] for n in inputs})
        hf = np.stack([out.start_logits.detach().numpy(), out.end_logits.detach().numpy()], axis=-1)
        compare_logits(checks, k, lmc, {name: hf for name in lmc}, a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

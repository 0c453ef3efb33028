"""Checks `lmrt sample` on a seq2seq (T5) plan against Hugging Face transformers'
T5ForConditionalGeneration.generate (4.46.3) on the same weights: greedy decoding
(do_sample = False, num_beams = 1) from decoder start id 0 until EOS (1) or
--max-new-tokens, for each prompt, token for token.

  seq2seq_generate_reference.py --plan P --weights W --prompts FILE --lmrt-json OUT --max-new-tokens S --seq T

The encoder's input is the prompt's bytes, cut to T - 1, then EOS, as `lmrt
sample` (and the seq2seq transform) make it. LMC draws only bytes (ids below 256; T5's sentinels
above are span corruption's), so HF's logits at ids >= 256 are masked too. OUT is
`lmrt sample --format json` of the same prompts: its completion's bytes and its
finish_reason ("eos" where HF ended with EOS, "length" where it ran out).
"""
import argparse
import json
import os
import sys

import torch
import transformers
from transformers import LogitsProcessor, LogitsProcessorList

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_export import Exporter  # noqa: E402
from parity_common import Checks, load  # noqa: E402


class BytesOnly(LogitsProcessor):
    def __call__(self, input_ids, scores):
        scores[:, 256:] = -float("inf")
        return scores


def greedy(model, ids, max_new_tokens):
    """generate(do_sample=False, num_beams=1, decoder_start_token_id=0, eos_token_id=1).
    With this torch (1.13 under Python 3.11) generate() itself fails importing
    torch.distributed.fsdp, so where it does, its greedy search is run written out:
    the encoder once, then argmax of the last decoder position's processed logits,
    appended until EOS or max_new_tokens (what GenerationMixin._sample does with
    do_sample False; the cache only saves work)."""
    processors = LogitsProcessorList([BytesOnly()])
    mask = torch.ones_like(ids)
    try:
        return "generate()", model.generate(input_ids=ids, attention_mask=mask, do_sample=False, num_beams=1,
                              max_new_tokens=max_new_tokens, decoder_start_token_id=0, eos_token_id=1,
                              pad_token_id=0, logits_processor=processors)
    except ValueError as e:
        if "mutable default" not in str(e):
            raise
    enc = model.get_encoder()(input_ids=ids, attention_mask=mask)
    dec = torch.zeros((1, 1), dtype=torch.long)
    for _ in range(max_new_tokens):
        logits = model(encoder_outputs=enc, attention_mask=mask, decoder_input_ids=dec).logits[:, -1, :]
        nxt = processors(dec, logits).argmax(-1, keepdim=True)
        dec = torch.cat([dec, nxt], dim=1)
        if nxt.item() == 1:
            break
    return "greedy loop", dec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--lmrt-json", required=True)
    ap.add_argument("--max-new-tokens", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True, help="the encoder's row length (the plan's seq)")
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    checks = Checks()
    model = Exporter(a.plan).model(load(a.weights), "T5ForConditionalGeneration").eval()
    prompts = open(a.prompts, encoding="utf-8").read().splitlines()
    lmc = [json.loads(line) for line in open(a.lmrt_json, encoding="utf-8")]
    if len(lmc) != len(prompts):
        sys.exit(f"{len(prompts)} prompts, {len(lmc)} lmrt lines")
    for k, (prompt, got) in enumerate(zip(prompts, lmc)):
        ids = torch.tensor([list(prompt.encode("utf-8"))[:a.seq - 1] + [1]])  # cut as the seq2seq transform cuts
        with torch.no_grad():
            how, out = greedy(model, ids, a.max_new_tokens)
        seq = out[0, 1:].tolist()  # after the start id
        eos = 1 in seq
        if eos:
            seq = seq[:seq.index(1)]
        want = bytes(seq).decode("utf-8", errors="replace")
        same = got["completion"] == want and got["finish_reason"] == ("eos" if eos else "length")
        checks.check(same, f"prompt {k}: {len(seq)} tokens{' + EOS' if eos else ''}, "
                           f"lmc {got['completion']!r} ({got['finish_reason']}) hf {want!r} ({how})")
    checks.finish()


if __name__ == "__main__":
    main()

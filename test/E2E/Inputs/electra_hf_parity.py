"""Compares `lmrt run --dump-dir` of models/electra.lm with Hugging Face transformers'
(4.46.3) ElectraForMaskedLM (the generator) and ElectraForPreTraining (the
discriminator) on the same weights, batches and sampled tokens.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) go to the two HF models through `lmrt weights export --format hf
--section ElectraForMaskedLM` and `--section ElectraForPreTraining` (the two
`export hf` sections of models/electra.lm, see hf_export.py): from_pretrained
builds each from its first export, later ones are copied in, and LMC's gradients
are exported the same way to compare by HF name. ELECTRA's sharing is HF's modules
shared: the generator's `electra.embeddings` is the discriminator's, and its
`generator_lm_head.weight` the shared word embeddings, so autograd sums both
networks' gradients into them as LMC does. The dumped mlm batch (ids with 80/10/10
corruption, labels with -100, segments, attention mask) feeds the generator; the
dumped draws of LMC's lm.sample step (sample0.ids, which no reference can recompute)
replace the selected positions for the discriminator, whose labels are 1 where the
token differs from the original. HF's loss is mlm + w * rtd (w = --rtd-weight, 50).

Checked each step, in fp32: the generator's logits (relative 1e-4, against the
logits LMC sampled from, sample0.logits), its MLM loss and the RTD loss (relative
1e-5; LMC's MLM loss is the cross-entropy of its own logits, and its RTD loss
(loss - mlm) / w), the combined loss (relative 1e-5) and every parameter's
gradient (relative 1e-4 of its norm, with the floor of bert_hf_parity.py for the
key biases, whose gradient is zero in exact arithmetic), per HF model (the shared
embeddings in both). Then the two models alone, the plan's forward programs
(`lmrt forward --model electra_generator` on the dumped ids, segments and
attention_mask, `--model electra_discriminator` on the discriminator's ids): their
logits must match ElectraForMaskedLM's and ElectraForPreTraining's to relative 1e-4. GELU is the erf form (HF's
"gelu"), dropout 0, eager attention; the word embeddings have no padding_idx, since
the generator may sample [PAD] (256) and LMC gives that row its gradient.

--count-only: prints the parameter counts of HF's two models for the config given
of a plan and LMC's, both from the parameter list of `lmrt inspect PLAN`.

Usage: electra_hf_parity.py --dump DIR --plan PLAN
       electra_hf_parity.py --count-only --inspect FILE --heads H --gen-heads G
"""
import argparse
import os
import re
import sys

import numpy as np
import torch
import transformers
from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_export import Exporter  # noqa: E402
from parity_common import Checks, check_grads, compare_logits, grad_floor, lmrt_forward, load, rel, step_weights, steps  # noqa: E402


def build(shapes, a):
    """The two HF models for LMC's shapes (for --count-only: no weights)."""
    vocab, e = shapes["embeddings.word"]
    ctx = shapes["embeddings.position"][0]
    layers = lambda p: 1 + max(int(m.group(1)) for n in shapes for m in [re.match(p + r"\.layer\.(\d+)\.", n)] if m)  # noqa: E731
    d = shapes["discriminator.layer.0.attention.query.w"][0]
    gd = shapes["generator.layer.0.attention.query.w"][0]
    common = dict(vocab_size=vocab, embedding_size=e, hidden_act="gelu", max_position_embeddings=ctx,
                  type_vocab_size=2)
    dc = ElectraConfig(hidden_size=d, num_hidden_layers=layers("discriminator"), num_attention_heads=a.heads,
                       intermediate_size=shapes["discriminator.layer.0.intermediate.w"][1], **common)
    gc = ElectraConfig(hidden_size=gd, num_hidden_layers=layers("generator"), num_attention_heads=a.gen_heads,
                       intermediate_size=shapes["generator.layer.0.intermediate.w"][1], **common)
    return tuple(sum(p.numel() for p in m.parameters()) for m in (ElectraForPreTraining(dc), ElectraForMaskedLM(gc)))


def lmc_counts(shapes):
    """LMC's parameters of each network: the discriminator's (and the generator's)
    own plus the shared embeddings."""
    n = {k: int(np.prod(v)) for k, v in shapes.items()}
    shared = sum(v for k, v in n.items() if k.startswith("embeddings."))
    disc = shared + sum(v for k, v in n.items() if k.startswith("discriminator"))
    gen = shared + sum(v for k, v in n.items() if k.startswith("generator"))
    return disc, gen, sum(n.values())


def print_counts(shapes, hf_counts):
    disc, gen, total = lmc_counts(shapes)
    ok = (disc, gen) == hf_counts
    print(f"discriminator: LMC {disc:,}, HF ElectraForPreTraining {hf_counts[0]:,}")
    print(f"generator: LMC {gen:,}, HF ElectraForMaskedLM {hf_counts[1]:,}")
    print(f"together (embeddings shared): {total:,}; counts {'ok' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump")
    ap.add_argument("--plan", help="the plan that wrote the dump (its two hf maps)")
    ap.add_argument("--count-only", action="store_true")
    ap.add_argument("--inspect", help="`lmrt inspect PLAN` output (with --count-only)")
    ap.add_argument("--heads", type=int, help="with --count-only")
    ap.add_argument("--gen-heads", type=int, help="with --count-only")
    ap.add_argument("--rtd-weight", type=float, default=50.0)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--logits-rtol", type=float, default=1e-4)
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")

    if a.count_only:
        shapes = {}
        for line in open(a.inspect):
            m = re.match(r"\s+(\S+)\s+f(?:32|64)\[([0-9, ]+)\]", line)
            if m and "." in m.group(1):
                shapes[m.group(1)] = tuple(int(x) for x in m.group(2).split(","))
        if "embeddings.word" not in shapes:
            sys.exit("no ELECTRA parameters in " + a.inspect)
        sys.exit(0 if print_counts(shapes, build(shapes, a)) else 1)

    init = load(os.path.join(a.dump, "init.safetensors"))
    ex_gen = Exporter(a.plan, section="ElectraForMaskedLM")
    ex_disc = Exporter(a.plan, section="ElectraForPreTraining")
    gen, disc = ex_gen.model(init, "ElectraForMaskedLM"), ex_disc.model(init, "ElectraForPreTraining")
    shapes = {n: v.shape for n, v in init.items()}
    checks = Checks()
    checks.failures += not print_counts(shapes, (sum(p.numel() for p in disc.parameters()),
                                                 sum(p.numel() for p in gen.parameters())))
    # ELECTRA's sharing: one embeddings module, the generator's decoder its word table
    # (no padding_idx: the generator may sample [PAD], whose row LMC trains).
    gen.electra.embeddings = disc.electra.embeddings
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
    disc.electra.embeddings.word_embeddings.padding_idx = None
    unique = {id(p): p for m in (gen, disc) for p in m.parameters()}
    print(f"{len(init)} parameters mapped; LMC {sum(v.size for v in init.values()):,} numbers, "
          f"HF {sum(p.numel() for p in unique.values()):,}")
    disc.train()
    gen.train()  # dropout is 0: train mode changes nothing but is what training runs

    weights = init
    for k, dump in steps(a.dump):
        if "sample0.ids" not in dump:
            sys.exit(f"step {k} holds no sample0.ids: the plan has no lm.sample step, or lmrt dumped none")
        ex_gen.copy_into(gen, ex_gen.export(weights))
        ex_disc.copy_into(disc, ex_disc.export(weights))
        disc.zero_grad()
        gen.zero_grad()
        t = lambda key: torch.from_numpy(dump[key].astype(np.int64))  # noqa: E731
        ids, labels, segments = t("ids"), t("labels"), t("segments")
        mask = torch.from_numpy(dump["attention_mask"].astype(np.float32))
        g = gen(input_ids=ids, token_type_ids=segments, attention_mask=mask, labels=labels)
        sampled = t("sample0.ids")
        selected = labels != -100
        disc_ids = torch.where(selected, sampled, ids)
        original = torch.where(selected, labels, ids)
        replaced = (disc_ids != original).float()
        d = disc(input_ids=disc_ids, token_type_ids=segments, attention_mask=mask, labels=replaced)
        loss = g.loss + a.rtd_weight * d.loss
        loss.backward()

        # LMC's own MLM loss, from the logits it sampled from.
        lg = dump["sample0.logits"].astype(np.float64)
        lab = dump["labels"]
        sel = lab != -100
        rows = lg[sel]
        lse = rows.max(-1) + np.log(np.exp(rows - rows.max(-1, keepdims=True)).sum(-1))
        mlm_lmc = float(np.mean(lse - rows[np.arange(len(rows)), lab[sel]]))
        rtd_lmc = (float(dump["loss"]) - mlm_lmc) / a.rtd_weight
        pad = int((dump["attention_mask"] == 0).sum())
        print(f"step {k}: {int(sel.sum())} masked, {int(replaced.sum())} replaced, {pad} padding positions")
        e = rel(lg, g.logits.detach().numpy())
        checks.check(e <= a.logits_rtol, f"step {k}: generator logits rel {e:.2e}")
        e = rel(mlm_lmc, g.loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: mlm lmc {mlm_lmc:.8f} hf {g.loss.item():.8f} rel {e:.2e}")
        e = rel(rtd_lmc, d.loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: rtd lmc {rtd_lmc:.8f} hf {d.loss.item():.8f} rel {e:.2e}")
        e = rel(float(dump["loss"]), loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: loss lmc {float(dump['loss']):.8f} hf {loss.item():.8f} rel {e:.2e}")
        floor = grad_floor(unique)
        lmc_grads = {n: dump["grad." + n] for n in init}
        for what, ex, model in (("generator", ex_gen, gen), ("discriminator", ex_disc, disc)):
            check_grads(checks, k, ex.export(lmc_grads), dict(model.named_parameters()), a.grad_rtol, floor, what)
        # The two models alone: the plan's forward programs on the same batch and weights.
        inputs = {"ids": dump["ids"], "segments": dump["segments"], "attention_mask": dump["attention_mask"]}
        lmc = lmrt_forward(a.plan, weights, inputs, model="electra_generator")
        compare_logits(checks, k, {"generator": lmc["logits"]}, {"generator": g.logits.detach().numpy()},
                       a.logits_rtol)
        inputs["ids"] = disc_ids.numpy().astype(np.int32)
        lmc = lmrt_forward(a.plan, weights, inputs, model="electra_discriminator")
        compare_logits(checks, k, {"discriminator": lmc["logits"]}, {"discriminator": d.logits.detach().numpy()},
                       a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

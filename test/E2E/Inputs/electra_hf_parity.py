"""Compares `lmrt run --dump-dir` of models/electra.lm with Hugging Face transformers'
(4.46.3) ElectraForMaskedLM (the generator) and ElectraForPreTraining (the
discriminator) on the same weights, batches and sampled tokens.

LMC's weights before each dumped step (init.safetensors, then each step's updated
parameters) are loaded into the two HF models through the name map below (LMC stores
a Linear's weight [in, out], HF [out, in]). ELECTRA's sharing is HF's modules
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
key biases, whose gradient is zero in exact arithmetic). GELU is the erf form (HF's
"gelu"), dropout 0, eager attention; the word embeddings have no padding_idx, since
the generator may sample [PAD] (256) and LMC gives that row its gradient.

--count-only: prints the parameter counts of HF's two models for the config given
of a plan and LMC's, both from the parameter list of `lmrt inspect PLAN`.

Usage: electra_hf_parity.py --dump DIR --heads H --gen-heads G
       electra_hf_parity.py --count-only --inspect FILE --heads H --gen-heads G
"""
import argparse
import glob
import os
import re
import sys

import numpy as np
import torch
import transformers
from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402


def layer_rules(lmc, hf):
    L = lmc + r"\.layer\.(\d+)\."
    H = hf + r"electra.encoder.layer.\1."
    return [
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
    ]


# LMC parameter path -> ("<model>:<HF name>", transposed?); the shared embeddings are
# named by the discriminator's module (the generator's is the same object).
RULES = [
    (r"embeddings\.word", "disc:electra.embeddings.word_embeddings.weight", False),
    (r"embeddings\.position", "disc:electra.embeddings.position_embeddings.weight", False),
    (r"embeddings\.segment", "disc:electra.embeddings.token_type_embeddings.weight", False),
    (r"embeddings\.ln_gamma", "disc:electra.embeddings.LayerNorm.weight", False),
    (r"embeddings\.ln_beta", "disc:electra.embeddings.LayerNorm.bias", False),
    (r"generator\.embeddings_project\.w", "gen:electra.embeddings_project.weight", True),
    (r"generator\.embeddings_project\.b", "gen:electra.embeddings_project.bias", False),
] + layer_rules(r"generator", "gen:") + [
    (r"generator_predictions\.dense\.w", "gen:generator_predictions.dense.weight", True),
    (r"generator_predictions\.dense\.b", "gen:generator_predictions.dense.bias", False),
    (r"generator_predictions\.ln\.gamma", "gen:generator_predictions.LayerNorm.weight", False),
    (r"generator_predictions\.ln\.beta", "gen:generator_predictions.LayerNorm.bias", False),
    (r"generator_predictions\.bias", "gen:generator_lm_head.bias", False),
] + layer_rules(r"discriminator", "disc:") + [
    (r"discriminator_predictions\.dense\.w", "disc:discriminator_predictions.dense.weight", True),
    (r"discriminator_predictions\.dense\.b", "disc:discriminator_predictions.dense.bias", False),
    (r"discriminator_predictions\.dense_prediction\.w",
     "disc:discriminator_predictions.dense_prediction.weight", True),
    (r"discriminator_predictions\.dense_prediction\.b",
     "disc:discriminator_predictions.dense_prediction.bias", False),
]


def hf_name(lmc_name):
    for pattern, repl, transposed in RULES:
        if re.fullmatch(pattern, lmc_name):
            return re.sub(pattern, repl, lmc_name), transposed
    sys.exit(f"no HF name for LMC parameter '{lmc_name}'")


def rel(a, b, floor=1e-30):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), floor))


def build(shapes, a):
    """The two HF models for LMC's shapes, sharing ELECTRA's embeddings."""
    vocab, e = shapes["embeddings.word"]
    ctx = shapes["embeddings.position"][0]
    layers = lambda p: 1 + max(int(m.group(1)) for n in shapes for m in [re.match(p + r"\.layer\.(\d+)\.", n)] if m)  # noqa: E731
    d = shapes["discriminator.layer.0.attention.query.w"][0]
    gd = shapes["generator.layer.0.attention.query.w"][0]
    common = dict(vocab_size=vocab, embedding_size=e, hidden_act="gelu", hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0, max_position_embeddings=ctx, type_vocab_size=2,
                  layer_norm_eps=1e-12, pad_token_id=256, attn_implementation="eager")
    dc = ElectraConfig(hidden_size=d, num_hidden_layers=layers("discriminator"), num_attention_heads=a.heads,
                       intermediate_size=shapes["discriminator.layer.0.intermediate.w"][1], **common)
    gc = ElectraConfig(hidden_size=gd, num_hidden_layers=layers("generator"), num_attention_heads=a.gen_heads,
                       intermediate_size=shapes["generator.layer.0.intermediate.w"][1], **common)
    disc, gen = ElectraForPreTraining(dc).float(), ElectraForMaskedLM(gc).float()
    counts = (sum(p.numel() for p in disc.parameters()), sum(p.numel() for p in gen.parameters()))
    gen.electra.embeddings = disc.electra.embeddings
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
    disc.electra.embeddings.word_embeddings.padding_idx = None
    return disc, gen, counts


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
    ap.add_argument("--count-only", action="store_true")
    ap.add_argument("--inspect", help="`lmrt inspect PLAN` output (with --count-only)")
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--gen-heads", type=int, required=True)
    ap.add_argument("--rtd-weight", type=float, default=50.0)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
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
        _, _, hf_counts = build(shapes, a)
        sys.exit(0 if print_counts(shapes, hf_counts) else 1)

    init = safetensors_np.load(os.path.join(a.dump, "init.safetensors"))
    shapes = {n: v.shape for n, v in init.items()}
    disc, gen, hf_counts = build(shapes, a)
    counts_ok = print_counts(shapes, hf_counts)
    hf_params = {"disc:" + n: p for n, p in disc.named_parameters()}
    hf_params.update({"gen:" + n: p for n, p in gen.named_parameters()})
    unique = {id(p) for p in hf_params.values()}
    names = {n: hf_name(n) for n in init}
    if len({id(hf_params[h]) for h, _ in names.values()}) != len(unique) or len(names) != len(unique):
        sys.exit(f"name map mismatch: {len(names)} LMC parameters, {len(unique)} distinct HF parameters")
    print(f"{len(names)} parameters mapped; LMC {sum(v.size for v in init.values()):,} numbers, "
          f"HF {sum(p.numel() for p in {id(p): p for p in hf_params.values()}.values()):,}")

    steps = sorted(glob.glob(os.path.join(a.dump, "step*.safetensors")),
                   key=lambda s: int(os.path.basename(s)[4:].split(".")[0]))
    if not steps:
        sys.exit("no step*.safetensors in " + a.dump)
    disc.train()
    gen.train()  # dropout is 0: train mode changes nothing but is what training runs
    failures = 0 if counts_ok else 1
    weights = init

    def check(what, err, tol):
        nonlocal failures
        ok = err <= tol
        failures += not ok
        return f"rel {err:.2e} {'ok' if ok else 'FAIL'}"

    for k, path in enumerate(steps, 1):
        dump = safetensors_np.load(path)
        if "sample0.ids" not in dump:
            sys.exit(f"{path} holds no sample0.ids: the plan has no lm.sample step, or lmrt dumped none")
        with torch.no_grad():
            for n, (h, transposed) in names.items():
                hf_params[h].copy_(torch.from_numpy(np.ascontiguousarray(weights[n].T if transposed else weights[n])))
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
        print(f"step {k}: generator logits " + check("logits", rel(lg, g.logits.detach().numpy()), a.grad_rtol))
        print(f"step {k}: mlm lmc {mlm_lmc:.8f} hf {g.loss.item():.8f} "
              + check("mlm", rel(mlm_lmc, g.loss.item()), a.loss_rtol))
        print(f"step {k}: rtd lmc {rtd_lmc:.8f} hf {d.loss.item():.8f} "
              + check("rtd", rel(rtd_lmc, d.loss.item()), a.loss_rtol))
        print(f"step {k}: loss lmc {float(dump['loss']):.8f} hf {loss.item():.8f} "
              + check("loss", rel(float(dump["loss"]), loss.item()), a.loss_rtol))
        floor = 1e-6 * max(float(np.linalg.norm(p.grad.numpy())) for p in hf_params.values())
        errs = []
        for n, (h, transposed) in names.items():
            gr = hf_params[h].grad.numpy()
            errs.append((rel(dump["grad." + n], gr.T if transposed else gr, floor), n))
        worst = max(errs)
        print(f"step {k}: {len(errs)} gradients, max rel err {worst[0]:.2e} ({worst[1]}) "
              + ("ok" if worst[0] <= a.grad_rtol else "FAIL"))
        failures += worst[0] > a.grad_rtol
        weights = {n: dump["param." + n] for n in init}
    print("parity: " + ("ok" if failures == 0 else f"FAILED ({failures} checks)"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

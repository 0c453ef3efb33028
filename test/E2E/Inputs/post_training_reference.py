"""A PyTorch reference of models/post/ (SFT, Bradley-Terry reward model, DPO): TRL
0.12's formulas, written out here on Hugging Face transformers' GPT-2 (4.46.3),
checked against `lmrt run --dump-dir` of the same plan on the same weights and
batches: the loss (relative 1e-5) and every trained parameter's gradient
(relative 1e-4 of its norm), for each dumped step.

  post_training_reference.py sft|rm|dpo --dump DIR --gpt-plan GPT.plan [--beta 0.1]

GPT.plan is models/gpt2.lm compiled with the same shapes: its `export hf` map
names the trunk's tensors for GPT2LMHeadModel (the post models keep gpt2.lm's
names). The rows come from the dump: the transform's ids with [PAD]/[CLS]/[SEP]
(256..258) read as "\\n" (10), as the models read them, and labels in LMC's
convention (labels[t] = the token at t + 1, -100 off the response), which is
HF's (labels[t] = the token at t, shifted inside the loss) moved by one:
hf_labels = [-100] + labels[:-1].

- sft: SFTTrainer with DataCollatorForCompletionOnlyLM: GPT2LMHeadModel(input_ids,
  attention_mask, labels = hf_labels).loss (HF's shifted, -100-ignoring mean).
- rm: RewardTrainer.compute_loss: r = GPT2ForSequenceClassification(num_labels =
  1)(ids).logits, pooled at the last token before the first pad (pad_token_id 0
  on padding: HF's rule), loss = -logsigmoid(r_c - r_r).mean(); score.weight is
  LMC's `score` transposed.
- dpo: DPOTrainer (loss_type "sigmoid", label_smoothing 0): get_batch_logps
  (log_softmax, gather at hf_labels[:, 1:], summed where != -100) of the policy
  and, under no_grad, of the reference (a second GPT2LMHeadModel loaded from the
  `ref.` weights), loss = -logsigmoid(beta ((pi_c - pi_r) - (ref_c - ref_r))).mean().
  LMC must have no gradient for a `ref.` parameter, and the metrics' values
  (rewards beta (pi - ref)) are printed.
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers import GPT2ForSequenceClassification

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_export import Exporter  # noqa: E402
from parity_common import Checks, check_grads, load, rel, step_weights, steps  # noqa: E402

NEWLINE, SPECIALS, PAD = 10, 256, 256


def pad_mask(ids):
    """1 on a row's tokens, 0 on its [PAD]s (the attention_mask TRL's collators make)."""
    return torch.from_numpy((ids != PAD).astype(np.int64))


def as_bytes(a):
    """Ids or labels as the models read them: the specials become "\\n"; -100 stays."""
    a = np.where(a >= SPECIALS, NEWLINE, a)
    return torch.from_numpy(a.astype(np.int64))


def hf_labels(labels):
    """LMC's labels (the next token at t) as HF's (the token at t)."""
    lab = as_bytes(labels)
    return torch.cat([torch.full_like(lab[:, :1], -100), lab[:, :-1]], dim=1)


def batch_logps(logits, labels):
    """TRL 0.12 DPOTrainer.get_batch_logps (decoder-only): labels[:, 1:] against
    logits[:, :-1], summed over the positions whose label is not -100."""
    labels = labels[:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = labels != -100
    labels[labels == -100] = 0
    per_token = torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)
    return (per_token * loss_mask).sum(-1)


def trunk(weights, prefix=""):
    return {n[len(prefix):]: v for n, v in weights.items() if n.startswith(prefix) and n[len(prefix):] != "score"
            and not (prefix == "" and n.startswith("ref."))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["sft", "rm", "dpo"])
    ap.add_argument("--dump", required=True)
    ap.add_argument("--gpt-plan", required=True, help="models/gpt2.lm at the same shapes (its hf map)")
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--f64", action="store_true", help="the plan was compiled with --float-type=f64")
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    torch.manual_seed(0)
    checks = Checks()
    init = load(os.path.join(a.dump, "init.safetensors"))
    ex = Exporter(a.gpt_plan)
    policy = ex.model(trunk(init), "GPT2LMHeadModel")
    if a.f64:
        policy.double()
    policy.train()  # dropout is 0 in gpt2.lm's export
    if a.mode == "rm":
        cfg = policy.config
        cfg.num_labels, cfg.pad_token_id = 1, 0
        model = GPT2ForSequenceClassification(cfg).to(policy.dtype)
        model.transformer.load_state_dict(policy.transformer.state_dict())
        model.train()
    else:
        model = policy
    ref = ex.model(trunk(init, "ref."), "GPT2LMHeadModel").to(policy.dtype) if a.mode == "dpo" else None
    params = dict(model.named_parameters())
    print(f"{a.mode}: {len(init)} LMC parameters, HF {sum(p.numel() for p in params.values()):,} trained numbers")

    weights = init
    for k, dump in steps(a.dump):
        ex.copy_into(model if a.mode != "rm" else policy, ex.export(trunk(weights)))
        if a.mode == "rm":
            model.transformer.load_state_dict(policy.transformer.state_dict())
            with torch.no_grad():
                model.score.weight.copy_(torch.from_numpy(weights["score"].T.copy()))
        if ref is not None:
            ex.copy_into(ref, ex.export(trunk(weights, "ref.")))
        model.zero_grad()
        if a.mode == "sft":
            loss = model(input_ids=as_bytes(dump["ids"]), attention_mask=pad_mask(dump["ids"]), labels=hf_labels(dump["labels"])).loss
        elif a.mode == "rm":
            def reward(side):
                mask = pad_mask(dump[side + "_ids"])
                ids = as_bytes(dump[side + "_ids"]).masked_fill(mask == 0, 0)  # padding as pad_token_id
                return model(input_ids=ids, attention_mask=mask).logits[:, 0]
            r_c, r_r = reward("chosen"), reward("rejected")
            loss = -F.logsigmoid(r_c - r_r).mean()
            print(f"step {k}: accuracy {(r_c > r_r).float().mean().item():.4f} margin {(r_c - r_r).mean().item():.6f}")
        else:
            def logps(net, side):
                logits = net(input_ids=as_bytes(dump[side + "_ids"]), attention_mask=pad_mask(dump[side + "_ids"])).logits
                return batch_logps(logits, hf_labels(dump[side + "_labels"]))
            pi_c, pi_r = logps(model, "chosen"), logps(model, "rejected")
            with torch.no_grad():
                ref_c, ref_r = logps(ref, "chosen"), logps(ref, "rejected")
            logits = (pi_c - pi_r) - (ref_c - ref_r)
            loss = -F.logsigmoid(a.beta * logits).mean()
            chosen, rejected = a.beta * (pi_c - ref_c).detach(), a.beta * (pi_r - ref_r).detach()
            print(f"step {k}: reward_accuracy {(chosen > rejected).float().mean().item():.4f} "
                  f"reward_margin {(chosen - rejected).mean().item():.6f}")
            ref_names = [n for n in weights if n.startswith("ref.")]
            moved = [n for n in ref_names if np.any(dump["grad." + n] != 0) or
                     dump["param." + n].tobytes() != init[n].tobytes()]
            checks.check(ref_names and not moved, f"step {k}: reference: {len(ref_names)} parameters, "
                         f"zero gradients and bit-identical to the start ({len(moved)} not)")
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: loss lmc {float(dump['loss']):.8f} torch {loss.item():.8f} rel {e:.2e}")
        grads = ex.export({n: dump["grad." + n] for n in trunk(weights)})
        if a.mode == "rm":
            grads = {"transformer." + n[len("transformer."):]: g for n, g in grads.items()}
            grads["score.weight"] = dump["grad.score"].T.copy()
        check_grads(checks, k, grads, params, a.grad_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()

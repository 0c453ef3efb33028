"""Recomputes a plan's metrics from its `lmrt eval --predictions` lines
(tokens, sft, preference: docs/finetuning.md §6) and checks them against the
metrics `lmrt eval` printed for the same weights over one validation batch
holding every record (so its means are exact):

  tokens      accuracy        = right words / words (labels against predictions)
  sft         val loss        = sum(loss * tokens) / sum(tokens)
              token_accuracy  = sum(token_accuracy * tokens) / sum(tokens)
  reward      accuracy        = mean(correct); margin = mean(margin)
  dpo         reward_accuracy = mean(correct); reward_margin = beta * mean(margin);
              chosen_reward   = beta * mean(chosen_reward), rejected_reward likewise

Each line is also checked for itself: its fields, correct == (margin > 0),
margin == chosen_reward - rejected_reward, and for DPO chosen_reward ==
chosen_logp - chosen_ref_logp.

  check_sequence_predictions.py --task TASK PRED.jsonl EVAL.log [--beta 0.1] [--records N]
"""
import argparse
import json
import re
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", choices=["tokens", "sft", "reward", "dpo"], required=True)
    ap.add_argument("predictions")
    ap.add_argument("log")
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--records", type=int, default=24)
    ap.add_argument("--rtol", type=float, default=1e-5)
    a = ap.parse_args()
    lines = [json.loads(l) for l in open(a.predictions)]
    printed = {}
    for l in open(a.log):
        m = re.match(r"^(\w[\w ]*): (-?[0-9.e+-]+|nan|inf)$", l.strip())
        if m:
            printed[m.group(1)] = float(m.group(2))
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(what + (" ok" if ok else " FAILED"))
        failures += 0 if ok else 1

    def close(x, y):
        return abs(x - y) <= a.rtol * max(abs(y), 1e-3)

    check([l["record"] for l in lines] == list(range(a.records)), f"{len(lines)} lines in record order")
    recomputed = {}
    if a.task == "tokens":
        words = sum(len(l["labels"]) for l in lines)
        right = sum(x == y for l in lines for x, y in zip(l["labels"], l["predictions"]))
        check(all(len(l["labels"]) == len(l["predictions"]) for l in lines), f"{words} words, a tag each")
        recomputed["accuracy"] = right / words
    elif a.task == "sft":
        tokens = sum(l["tokens"] for l in lines)
        recomputed["val loss"] = sum(l["loss"] * l["tokens"] for l in lines) / tokens
        recomputed["token_accuracy"] = sum(l["token_accuracy"] * l["tokens"] for l in lines) / tokens
        print(f"{tokens} response tokens")
    else:
        consistent = all(l["correct"] == (l["margin"] > 0) and
                         abs(l["margin"] - (l["chosen_reward"] - l["rejected_reward"])) <= 1e-6 * (1 + abs(l["margin"]))
                         for l in lines)
        if a.task == "dpo":
            consistent = consistent and all(
                abs(l["chosen_reward"] - (l["chosen_logp"] - l["chosen_ref_logp"])) <= 1e-6 * (1 + abs(l["chosen_logp"])) and
                abs(l["rejected_reward"] - (l["rejected_logp"] - l["rejected_ref_logp"])) <= 1e-6 * (1 + abs(l["rejected_logp"]))
                for l in lines)
        check(consistent, "each line's margin, rewards and correct agree")
        n = len(lines)
        if a.task == "reward":
            recomputed["accuracy"] = sum(l["correct"] for l in lines) / n
            recomputed["margin"] = sum(l["margin"] for l in lines) / n
        else:
            recomputed["reward_accuracy"] = sum(l["correct"] for l in lines) / n
            recomputed["reward_margin"] = a.beta * sum(l["margin"] for l in lines) / n
            recomputed["chosen_reward"] = a.beta * sum(l["chosen_reward"] for l in lines) / n
            recomputed["rejected_reward"] = a.beta * sum(l["rejected_reward"] for l in lines) / n
    for name, value in recomputed.items():
        got = printed.get(name)
        check(got is not None and close(value, got),
              f"{name}: from the predictions {value:.6f}, lmrt eval {got if got is None else f'{got:.6f}'}")
    print("sequence predictions: " + ("ok" if failures == 0 else f"{failures} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

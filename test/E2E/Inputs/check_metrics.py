"""Checks an `lmrt run --metrics` file: every line has the documented keys, the first
loss is near ln(vocab) (a fresh model is uniform), and training made the loss fall."""
import argparse
import json
import math
import sys

ap = argparse.ArgumentParser()
ap.add_argument("metrics")
ap.add_argument("--vocab", type=int, default=256)
ap.add_argument("--min-drop", type=float, required=True, help="first loss - last loss, nats")
ap.add_argument("--logit-var", type=float, default=0.0,
                help="variance of a fresh model's logits (T5's initialisation gives 1): the first loss is then "
                "about ln(vocab) + var / 2 (E log sum exp of V normals), not ln(vocab)")
ap.add_argument("--max-val-loss", type=float, default=None)
ap.add_argument("--min-val-metric", action="append", default=[], metavar="NAME=VALUE",
                help="the last evaluation's metric NAME (val_NAME in the file) must be at least VALUE")
ap.add_argument("--eval-output", help="`lmrt eval` output on the final weights with the run's eval batches: "
                "its loss and each metric must equal the last evaluation's")
a = ap.parse_args()

rows = [json.loads(line) for line in open(a.metrics) if line.strip()]
if not rows:
    sys.exit("no metrics rows")
for r in rows:
    missing = {"step", "loss", "lr", "grad_norm", "tokens_per_s"} - r.keys()
    if missing:
        sys.exit(f"row {r} lacks {sorted(missing)}")
    if not all(math.isfinite(r[k]) for k in ("loss", "lr", "grad_norm", "tokens_per_s")):
        sys.exit(f"non-finite value in {r}")
steps = [r["step"] for r in rows]
if steps != sorted(steps) or len(set(steps)) != len(steps):
    sys.exit(f"steps not increasing: {steps[:10]}...")
first, last = rows[0]["loss"], rows[-1]["loss"]
expected = math.log(a.vocab) + a.logit_var / 2
print(f"first loss {first:.4f} (ln {a.vocab}{f' + {a.logit_var:g} / 2' if a.logit_var else ''} = {expected:.4f}), "
      f"last loss {last:.4f}")
if abs(first - expected) > 0.5:
    sys.exit("first loss is not near ln(vocab): the initialisation is off")
if first - last < a.min_drop:
    sys.exit(f"loss fell by {first - last:.4f} < {a.min_drop}")
vals = [r["val_loss"] for r in rows if "val_loss" in r]
if not vals:
    sys.exit("no val_loss in metrics")
print(f"val_loss {vals[0]:.4f} -> {vals[-1]:.4f}")
if a.max_val_loss is not None and vals[-1] > a.max_val_loss:
    sys.exit(f"final val_loss {vals[-1]:.4f} > {a.max_val_loss}")
for spec in a.min_val_metric:
    name, _, bound = spec.partition("=")
    got = [r["val_" + name] for r in rows if "val_" + name in r]
    if not got:
        sys.exit(f"no val_{name} in metrics")
    print(f"val_{name} {got[0]:.4f} -> {got[-1]:.4f} (at least {float(bound):g})")
    if got[-1] < float(bound):
        sys.exit(f"final val_{name} {got[-1]:.4f} < {bound}")
if a.eval_output:
    last_eval = [r for r in rows if "val_loss" in r][-1]
    printed = {}
    for line in open(a.eval_output):  # "val loss: 3.72", "mlm_accuracy: 0.41", ...
        key, sep, value = line.partition(": ")
        try:
            printed[key.strip()] = float(value.split()[0]) if sep else None
        except (ValueError, IndexError):
            pass
    want = {"val loss": last_eval["val_loss"]}
    want.update({k[4:]: v for k, v in last_eval.items() if k.startswith("val_") and k != "val_loss"})
    for k, v in want.items():
        if k not in printed:
            sys.exit(f"lmrt eval printed no '{k}'")
        if abs(printed[k] - v) > 1e-6 * max(1.0, abs(v)):
            sys.exit(f"lmrt eval's {k} {printed[k]} differs from the run's last evaluation {v}")
    print("eval matches the run: " + ", ".join(f"{k} {v:.4f}" for k, v in want.items()))
print("metrics: ok")

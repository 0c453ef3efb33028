"""What the parity scripts (bert/roberta, albert, electra, deberta, gpt2, llama
hf-parity, spanbert_reference) share: the relative error, the dumped steps of
`lmrt run --dump-dir` (init.safetensors, then step<k>.safetensors with the batch,
the loss, every "grad.<param>" and the updated "param.<param>"), a failure
count with the lines the .test files FileCheck, and the model's own logits
through `lmrt forward --inputs` on a dumped batch.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402


def rel(a, b, floor=1e-30):
    """|a - b| / |b| over all elements (norms), with |b| at least `floor`."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), floor))


def parity_args():
    """The options every HF parity script takes: --dump, --plan and the loss,
    gradient and logits tolerances; a script adds its own before parsing."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--plan", required=True, help="the plan that wrote the dump (its hf map)")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--logits-rtol", type=float, default=1e-4)
    return ap


def hf_model(a, cls, train=True):
    """Prints the library versions, loads the dump's initial weights and builds
    HF's `cls` from their export (the plan's name map): (init, exporter, model,
    the model's parameters by name). `train`: train mode (dropout is 0 in the
    exported configs, so it changes nothing but is what training runs)."""
    import torch
    import transformers
    from hf_export import Exporter
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    init = load(os.path.join(a.dump, "init.safetensors"))
    ex = Exporter(a.plan)
    model = ex.model(init, cls)
    if train:
        model.train()
    return init, ex, model, dict(model.named_parameters())


def print_mapped(init, model, extra=""):
    """`N parameters mapped; LMC X numbers, HF Y[extra]`."""
    print(f"{len(init)} parameters mapped; LMC {sum(v.size for v in init.values()):,} numbers, "
          f"HF {sum(p.numel() for p in model.parameters()):,}{extra}")


def load(path):
    return safetensors_np.load(path)


def steps(dump_dir):
    """[(k, dump)] for the step<k>.safetensors of a dump directory, in step order;
    exits when there is none."""
    paths = sorted(glob.glob(os.path.join(dump_dir, "step*.safetensors")),
                   key=lambda s: int(os.path.basename(s)[4:].split(".")[0]))
    if not paths:
        sys.exit("no step*.safetensors in " + dump_dir)
    return [(k, load(p)) for k, p in enumerate(paths, 1)]


def step_weights(init, dump):
    """The parameters after a dumped step (the weights of the next one)."""
    return {n: dump["param." + n] for n in init}


class Checks:
    """Counts failed checks; each check prints one line ending in ok or FAIL."""

    def __init__(self):
        self.failures = 0

    def check(self, ok, line):
        self.failures += not ok
        print(f"{line} {'ok' if ok else 'FAIL'}", flush=True)
        return ok

    def finish(self):
        print("parity: " + ("ok" if self.failures == 0 else f"FAILED ({self.failures} checks)"))
        sys.exit(1 if self.failures else 0)


def grad_floor(params):
    """1e-6 of the largest gradient's norm: a gradient below it (the key biases',
    zero in exact arithmetic, so rounding noise ~1e-12 on both sides) is compared
    against that floor instead of its own norm."""
    return 1e-6 * max(float(np.linalg.norm(p.grad.numpy())) for p in params.values())


def check_grads(checks, k, grads, params, rtol, floor=1e-30, what=""):
    """`step K: [WHAT ]N gradients, max rel err E (NAME) ok`: LMC's gradients
    {name: array} against the torch parameters of the same names."""
    worst = max((rel(g, params[n].grad.numpy(), floor), n) for n, g in grads.items())
    return checks.check(worst[0] <= rtol, f"step {k}: {what + ' ' if what else ''}{len(grads)} gradients, "
                        f"max rel err {worst[0]:.2e} ({worst[1]})")


def lmrt_forward(plan, weights, inputs, model=None, lmrt=None):
    """Runs `lmrt forward PLAN --weights W --inputs I [--model M]` on numpy
    dicts of plan-named weights and program inputs; returns its outputs."""
    lmrt = lmrt or os.environ.get("LMRT", "lmrt")
    with tempfile.TemporaryDirectory() as tmp:
        w, i, o = (os.path.join(tmp, n + ".safetensors") for n in ("w", "in", "out"))
        safetensors_np.save(w, weights)
        safetensors_np.save(i, inputs)
        cmd = [lmrt, "forward", plan, "--weights", w, "--inputs", i, "--out", o]
        if model:
            cmd += ["--model", model]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
        return load(o)


def compare_logits(checks, k, lmc, hf, rtol):
    """One line per output: `step K: logits NAME [shape] rel ERR ok`, with
    `lmc` and `hf` dicts of the same names (LMC's output names)."""
    for name in lmc:
        a, b = lmc[name], np.asarray(hf[name])
        if a.shape != b.shape:
            checks.check(False, f"step {k}: logits {name} lmc {list(a.shape)} hf {list(b.shape)}")
            continue
        e = rel(a, b)
        checks.check(e <= rtol, f"step {k}: logits {name} {list(a.shape)} rel {e:.2e}")

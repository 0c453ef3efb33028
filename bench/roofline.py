"""The CPU roofline benchmark (driven by bench/roofline.sh): for each model configuration,
compiles the plan with lmc, trains N steps with lmrt (every variant of LMRT_VARIANTS) and
with PyTorch (bench/torch_train_gpt.py, the same GPT and recipe; TORCH_CPU_MODES: PyTorch 2
eager with fused AdamW and SDPA, torch.compile, CPU autocast bf16, from the venv
bench/setup-torch2.sh makes, else Debian's 1.13 eager), in --rounds rounds (3 by default) that
interleave the implementations, times oneDNN's sgemm (the f32 GEMM lmrt's matmuls run on;
lmrt_sgemm_rate) on square matrices between runs (the machine's speed drifts over minutes on a
shared host; the readings bracket each run), and prints
one JSON line per (config, implementation), then one line of speedups per config:

  config, impl, step_time_s (the median over the rounds of each run's mean step time after the
  warmup), rounds (each round's step time), tokens_per_s,
  plan_gflop_per_step (the plan's predicted FLOPs of one train step), achieved_gflops
  (plan FLOPs / step time, for PyTorch too: same model, same FLOPs), sgemm_gflops (the mean
  of sgemm_before and sgemm_after), fraction_of_sgemm (achieved / sgemm_gflops), timed_steps, threads, load_avg_1m (the machine's 1-minute load average
  after the config: on a shared machine, compare lines taken under similar load).

Logs (lmrt --profile tables, PyTorch output) go to runs/roofline/.

With --device cuda it is the GPU benchmark instead: GPT-2 124M at batch 8 x seq 1024
(config gpt2_b8t1024; --configs picks others), the plan compiled with --target cpu,cuda and
trained by `lmrt run --device cuda`, beside PyTorch on the same GPU in the same run (eager, and
torch.compile with --torch-modes eager,compile; attention through PyTorch's fused SDPA, as one
would write it for speed), in f32, TF32 and/or bf16 (--precisions f32,tf32,bf16; --tf32 alone
means tf32; bf16: lmrt's plan compiled with --precision bf16, PyTorch under CUDA autocast bf16).
Each line then has tokens_per_s, achieved_tflops (plan FLOPs / step time) and mfu (against
--peak-tflops, 989 for an H100/H200's dense bf16) instead of the sgemm columns. The GPU check
(scripts/gpu-check.sh) runs it from the GPU bundle with --time-budget and --keep-going."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# lmrt variants: (impl name, extra `lmc compile` flags).
LMRT_VARIANTS = [
    ("lmrt", []),                              # fusion on: generated kernels (docs/fusion.md)
    ("lmrt-unfused", ["--fusion=none"]),       # one library kernel per op, the reference mode
    ("lmrt-bf16", ["--precision=bf16"]),       # bf16 GEMM operands, fp32 rest (docs/mixed-precision.md)
]

# name, model file, its preset (models/gpt2.lm), model shape for PyTorch, steps (full, quick)
CONFIGS = [
    ("nano", "models/gpt2.lm", "tiny",
     dict(layers=4, d=128, heads=4, vocab=256, seq=64, ctx=64, batch=12), (40, 12)),
    ("tiny", "models/gpt2.lm", "bench_tiny",
     dict(layers=4, d=256, heads=4, vocab=4096, seq=128, ctx=128, batch=8), (20, 8)),
    ("gpt2_b4t64", "models/gpt2.lm", "gpt2_b4t64",
     dict(layers=12, d=768, heads=12, vocab=50257, seq=64, ctx=1024, batch=4), (12, 4)),
    ("gpt2_b1t1024", "models/gpt2.lm", "gpt2_b1t1024",
     dict(layers=12, d=768, heads=12, vocab=50257, seq=1024, ctx=1024, batch=1), (5, 3)),
    # --device cuda: GPT-2 124M at the shape of the GPU benchmark (without dropout, as
    # PyTorch's side runs; `small` has GPT-2's 0.1).
    ("gpt2_b8t1024", "models/gpt2.lm", "gpt2_b8t1024",
     dict(layers=12, d=768, heads=12, vocab=50257, seq=1024, ctx=1024, batch=8), (30, 10)),
]
CPU_CONFIGS = "nano,tiny,gpt2_b4t64,gpt2_b1t1024"

# PyTorch on the CPU: mode -> bench/torch_train_gpt.py flags. Every mode uses fused AdamW and
# PyTorch's fused attention (scaled_dot_product_attention): what one writes for speed in PyTorch 2.
TORCH_CPU_MODES = {
    "eager": ["--fused-adamw", "--attention", "sdpa"],
    "compile": ["--fused-adamw", "--attention", "sdpa", "--compile"],
    "autocast": ["--fused-adamw", "--attention", "sdpa", "--autocast", "bf16"],
    "compile-autocast": ["--fused-adamw", "--attention", "sdpa", "--compile", "--autocast", "bf16"],
    "eager-debian": [],  # Debian's PyTorch 1.13 (no fused AdamW or SDPA training on the CPU): the old baseline
}
CPU_TORCH_MODES = "eager,compile,autocast"
TORCH2_VENV = os.path.expanduser(os.environ.get("LMC_TORCH2_VENV", "~/.cache/lmc/venv-torch2"))


def default_torch_python():
    py = os.path.join(TORCH2_VENV, "bin", "python")
    return py if os.path.exists(py) else sys.executable
CUDA_CONFIGS = "gpt2_b8t1024"


def run(cmd, log=None):
    res = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log:
        with open(log, "w") as f:
            f.write(" ".join(cmd) + "\n" + res.stdout)
    if res.returncode != 0:
        sys.exit(f"roofline: command failed ({res.returncode}): {' '.join(cmd)}\n{res.stdout[-3000:]}")
    return res.stdout


def sgemm_rate(build, threads, seconds):
    out = run([f"{build}/bin/lmrt_sgemm_rate", "--threads", str(threads), "--seconds", str(seconds)])
    return json.loads(out.strip().splitlines()[-1])["sgemm_gflops"]


def lmrt_step(build, plan, data, steps, warmup, threads, workdir, tag):
    metrics = os.path.join(workdir, f"{tag}.metrics.jsonl")
    out = run([f"{build}/bin/lmrt", "run", plan, "--data", data, "--steps", str(steps), "--eval-batches", "0",
               "--metrics", metrics, "--overwrite", "--out", os.path.join(workdir, f"{tag}.safetensors"), "--threads", str(threads),
               "--profile"], log=os.path.join(workdir, f"{tag}.log"))
    rows = [json.loads(line) for line in open(metrics)]
    gflop = float(re.search(r"plan ([0-9.]+) GFLOP/step", out).group(1))
    return rows[warmup:], gflop


def check_no_dropout(build, model, preset):
    """Fails unless the preset's config has every dropout rate 0: bench/torch_train_gpt.py, the
    PyTorch side of every config, trains without dropout (it has no dropout option), and a plan
    with dropout runs dropout and attention-with-dropout kernels PyTorch does not (once 35 ms of
    a 145 ms GPU step). Reads the config from the frontend (`lmc compile --emit=mlir`)."""
    out = run([f"{build}/bin/lmc", "compile", model, "--preset", preset, "--emit=mlir"])
    m = re.search(r"lm\.config = \{([^}]*)\}", out)
    if not m:
        sys.exit(f"roofline: no lm.config in the frontend module of {model} --preset {preset}")
    rates = {k: float(v) for k, v in re.findall(r"(\w*dropout\w*) = ([0-9.eE+-]+)", m.group(1))}
    on = {k: v for k, v in rates.items() if v != 0}
    if on:
        sys.exit(f"roofline: preset '{preset}' of {model} has dropout ({', '.join(f'{k} = {v:g}' for k, v in on.items())}), "
                 f"which bench/torch_train_gpt.py does not run: give the benchmark a preset without dropout")
    return rates


def plan_gflop(build, plan):
    out = run([f"{build}/bin/lmrt", "inspect", plan])
    m = re.search(r"flops per train step: ([0-9.]+) ([KMGT]?)FLOP", out)
    return float(m.group(1)) * {"": 1e-9, "K": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}[m.group(2)]


def timed(cmd, log, timeout):
    """Runs cmd with its output in log: (True, its output), or (False, why it failed)."""
    try:
        res = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode("utf-8", "replace")
        with open(log, "w") as f:
            f.write(" ".join(cmd) + "\n" + out)
        return False, f"timed out after {timeout:.0f} s"
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n" + res.stdout)
    if res.returncode != 0:
        return False, f"exit code {res.returncode}: {res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ''}"
    return True, res.stdout


def cuda_main(a, build, workdir):
    """lmrt --device cuda beside PyTorch (eager, torch.compile) on the same GPU, one JSON line
    per (implementation, precision): f32 (strict fp32 GEMMs), tf32 (TF32 tensor cores) and bf16
    (lmrt: a plan compiled with --precision bf16; PyTorch: autocast to bf16), each
    with the plan's FLOPs per step over the measured step time and the MFU against --peak-tflops
    (the GPU's dense bf16 peak: what the run would need to reach to use the chip fully). With
    --time-budget, a measurement that would start after the budget is reported as skipped, and
    each one is cut off where the budget ends; with --keep-going a failed one is a JSON line with
    its error, and the rest still run (the GPU check wants every number it can get)."""
    deadline = time.monotonic() + a.time_budget if a.time_budget else None
    precisions = a.precisions.split(",") if a.precisions else (["tf32"] if a.tf32 else ["f32"])
    torch_precisions = a.torch_precisions.split(",") if a.torch_precisions else precisions
    torch_modes = [m for m in (a.torch_modes or "eager").split(",") if m] if not a.no_torch else []
    python = a.python or sys.executable
    for name, model, preset, shape, (full, quick) in CONFIGS:
        if name not in a.configs.split(","):
            continue
        steps = a.steps or (quick if a.quick else full)
        warmup = min(a.warmup, steps - 1)
        tokens = shape["batch"] * shape["seq"]
        plan = os.path.join(workdir, f"{name}.cuda.plan")
        check_no_dropout(build, model, preset)
        run([f"{build}/bin/lmc", "compile", model, "--preset", preset, "--target", "cpu,cuda", "-o", plan])
        plan_bf16 = os.path.join(workdir, f"{name}.cuda-bf16.plan")
        if "bf16" in precisions or "bf16-tc" in precisions:
            run([f"{build}/bin/lmc", "compile", model, "--preset", preset, "--target", "cpu,cuda", "--precision",
                 "bf16", "-o", plan_bf16])
        if a.compile_only:
            continue
        gflop = plan_gflop(build, plan)  # the fp32 plan's: one model's FLOPs for every precision
        jobs = [("lmrt-cuda", p) for p in precisions]
        jobs += [(f"pytorch-{m}-cuda", p) for m in torch_modes for p in torch_precisions]
        for impl, precision in jobs:
            line = {"config": name, "impl": impl, "device": "cuda", "precision": precision}
            left = deadline - time.monotonic() if deadline else None
            if left is not None and left < 15:
                print(json.dumps({**line, "skipped": "time budget spent"}), flush=True)
                continue
            limit = min(x for x in (left, a.run_timeout or None) if x) if (left or a.run_timeout) else None
            tag = f"{name}.{impl}.{precision}"
            tf32 = ["--tf32"] if precision == "tf32" else []
            if impl == "lmrt-cuda":
                metrics = os.path.join(workdir, f"{tag}.metrics.jsonl")
                # bf16-tc: the bf16 plan with attention on 16-bit tensor cores (opt-in until measured on
                # a GPU: runtime/cuda/attention.cu).
                env = ["env", "LMRT_CUDA_ATTENTION=tensor-cores"] if precision == "bf16-tc" else []
                ok, out = timed([*env, f"{build}/bin/lmrt", "run", plan_bf16 if precision.startswith("bf16") else plan,
                                 "--device", "cuda", "--data", a.data,
                                 "--steps", str(steps), "--eval-batches", "0", "--metrics", metrics, "--overwrite",
                                 "--out", os.path.join(workdir, f"{tag}.safetensors"), *tf32],
                                os.path.join(workdir, f"{tag}.log"), limit)
                if ok:
                    rows = [json.loads(r) for r in open(metrics)][warmup:]
                    step_s, timed_steps = sum(tokens / r["tokens_per_s"] for r in rows) / len(rows), len(rows)
            else:
                mode = impl.split("-")[1]
                # torch.compile compiles in its first step and may recompile in the second.
                ok, out = timed([python, "bench/torch_train_gpt.py", "--data", a.data, "--steps", str(steps),
                                 "--warmup-steps", str(max(warmup, 2) if mode == "compile" else warmup),
                                 "--timing-json", "--device", "cuda", "--attention", "sdpa",
                                 *(["--compile"] if mode == "compile" else []), *tf32,
                                 *(["--autocast", "bf16"] if precision == "bf16" else []),
                                 *[f"--{k}={v}" for k, v in shape.items()]],
                                os.path.join(workdir, f"{tag}.log"), limit)
                if ok:
                    t = json.loads(out.strip().splitlines()[-1])
                    step_s, timed_steps = t["step_time_s"], t["timed_steps"]
            if not ok:
                if not a.keep_going:
                    sys.exit(f"roofline: {impl} ({precision}) failed: {out}")
                print(json.dumps({**line, "error": out, "log": os.path.join(workdir, f"{tag}.log")}), flush=True)
                continue
            achieved = gflop / step_s / 1e3
            print(json.dumps({**line, "step_time_s": round(step_s, 6), "tokens_per_s": round(tokens / step_s, 1),
                              "plan_gflop_per_step": gflop, "achieved_tflops": round(achieved, 2),
                              "mfu": round(achieved / a.peak_tflops, 4), "peak_tflops": a.peak_tflops,
                              "timed_steps": timed_steps}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default="runs/fortunes")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--quick", action="store_true", help="fewer steps (about 3 minutes in all)")
    ap.add_argument("--configs", default=None, help=f"default: {CPU_CONFIGS} (cpu), {CUDA_CONFIGS} (cuda)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--tf32", action="store_true", help="--device cuda: f32 GEMMs on TF32 tensor cores")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--torch-modes", help="PyTorch variants, comma-separated. cpu: eager, compile, autocast, "
                    "compile-autocast, eager-debian (default: eager,compile,autocast with a PyTorch 2 venv, else "
                    "eager-debian); cuda: eager, compile (default: eager)")
    ap.add_argument("--python", help="the Python with torch that runs PyTorch (default: cpu, the PyTorch 2 venv "
                    "of bench/setup-torch2.sh when it exists; cuda, this Python)")
    ap.add_argument("--rounds", type=int, default=0,
                    help="cpu: rounds of all implementations, interleaved; each reports its median (default 3, --quick 1)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps at the start of each run")
    cuda = ap.add_argument_group("--device cuda")
    cuda.add_argument("--precisions", help="comma list of f32, tf32, bf16 and bf16-tc (lmrt's bf16 plan with "
                      "LMRT_CUDA_ATTENTION=tensor-cores; default: f32, or tf32 with --tf32)")
    cuda.add_argument("--torch-precisions", help="PyTorch's precisions, when fewer than --precisions (the GPU "
                      "check leaves out PyTorch's f32: slow, and known)")

    cuda.add_argument("--steps", type=int, default=0, help="steps per run (default: the config's)")

    cuda.add_argument("--peak-tflops", type=float, default=989.0,
                      help="the GPU's peak for the MFU column (H100/H200 SXM dense bf16: 989)")
    cuda.add_argument("--time-budget", type=float, default=0, help="seconds for all runs (0: no limit)")
    cuda.add_argument("--compile-only", action="store_true",
                      help="only compile the plans (scripts/gpu-bundle.sh records them for the GPU machine)")
    cuda.add_argument("--run-timeout", type=float, default=0, help="seconds for one run (0: no limit)")
    cuda.add_argument("--keep-going", action="store_true", help="report a failed run and go on")
    ap.add_argument("--workdir", default=os.path.join(ROOT, "runs", "roofline"), help="plans, logs, metrics")
    ap.add_argument("--check-presets", action="store_true",
                    help="only check that every config's preset has no dropout (as PyTorch's side), and exit")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    if a.check_presets:
        for name, model, preset, _, _ in CONFIGS:
            rates = check_no_dropout(build, os.path.join(ROOT, model), preset)
            print(f"{name}: {model} --preset {preset}: " + ", ".join(f"{k} = {v:g}" for k, v in sorted(rates.items())))
        return
    workdir = os.path.abspath(a.workdir)
    os.makedirs(workdir, exist_ok=True)
    if a.configs is None:
        a.configs = CUDA_CONFIGS if a.device == "cuda" else CPU_CONFIGS
    if a.device == "cuda":
        return cuda_main(a, build, workdir)
    torch_python = a.python or default_torch_python()
    have_torch2 = a.python is not None or torch_python != sys.executable
    if not a.no_torch and not have_torch2:
        print(f"roofline: no PyTorch 2 venv ({TORCH2_VENV}; bench/setup-torch2.sh makes it): PyTorch runs "
              f"use Debian's, {sys.executable}", file=sys.stderr)
    modes = a.torch_modes or (CPU_TORCH_MODES if have_torch2 else "eager-debian")
    torch_modes = [] if a.no_torch else [m for m in modes.split(",") if m]
    for m in torch_modes:
        if m not in TORCH_CPU_MODES:
            sys.exit(f"roofline: --torch-modes: unknown mode '{m}' (known: {', '.join(TORCH_CPU_MODES)})")
    rounds = a.rounds or (1 if a.quick else 3)
    for name, model, preset, shape, (full, quick) in CONFIGS:
        if name not in a.configs.split(","):
            continue
        steps = (quick if a.quick else full)
        warmup = min(a.warmup, steps - 1)
        seconds = 0.3 if a.quick else 0.6
        tokens = shape["batch"] * shape["seq"]
        plans = {}
        check_no_dropout(build, model, preset)
        for impl, flags in LMRT_VARIANTS:
            plans[impl] = os.path.join(workdir, f"{name}.{impl}.plan")
            run([f"{build}/bin/lmc", "compile", model, "--preset", preset, *flags, "-o", plans[impl]])
        gflop = plan_gflop(build, plans["lmrt"])
        impls = [impl for impl, _ in LMRT_VARIANTS] + [f"pytorch-{m}" for m in torch_modes]
        # Rounds interleave the implementations, so drift on a shared machine spreads over all of
        # them; each implementation's step time is its median over the rounds.
        times = {impl: [] for impl in impls}
        rates = {impl: [] for impl in impls}
        timed_steps, torch_version = {}, None
        rate = sgemm_rate(build, a.threads, seconds)
        for r in range(rounds):
            for impl in impls:
                tag = f"{name}.{impl}.r{r}"
                if impl.startswith("lmrt"):
                    rows, _ = lmrt_step(build, plans[impl], a.data, steps, warmup, a.threads, workdir, tag)
                    step_s, timed_steps[impl] = sum(tokens / row["tokens_per_s"] for row in rows) / len(rows), len(rows)
                else:
                    mode = impl[len("pytorch-"):]
                    compiled = mode.startswith("compile")
                    # torch.compile compiles in its first step and may recompile in the second.
                    out = run([torch_python, "bench/torch_train_gpt.py", "--data", a.data, "--steps",
                               str(steps + (2 if compiled else 0)),
                               "--warmup-steps", str(warmup + (2 if compiled else 0)), "--timing-json",
                               "--threads", str(a.threads), *TORCH_CPU_MODES[mode],
                               *[f"--{k}={v}" for k, v in shape.items()]], log=os.path.join(workdir, f"{tag}.log"))
                    t = json.loads(out.strip().splitlines()[-1])
                    step_s, timed_steps[impl] = t["step_time_s"], t["timed_steps"]
                    torch_version = t.get("torch_version", torch_version)
                after = sgemm_rate(build, a.threads, seconds)
                times[impl].append(step_s)
                rates[impl] += [rate, after]
                rate = after
        load = round(os.getloadavg()[0], 2)
        median = {impl: statistics.median(v) for impl, v in times.items()}
        for impl in impls:
            step_s = median[impl]
            achieved = gflop / step_s
            roof = statistics.mean(rates[impl])
            line = {"config": name, "impl": impl, "step_time_s": round(step_s, 6),
                    "tokens_per_s": round(tokens / step_s, 1), "plan_gflop_per_step": gflop,
                    "achieved_gflops": round(achieved, 2), "sgemm_gflops": round(roof, 2),
                    "fraction_of_sgemm": round(achieved / roof, 3), "rounds": [round(t, 6) for t in times[impl]],
                    "timed_steps": timed_steps[impl], "threads": a.threads, "load_avg_1m": load}
            if impl.startswith("pytorch"):
                line["torch_version"] = torch_version
            print(json.dumps(line), flush=True)
        print(json.dumps({"config": name, "speedups": speedups(median)}), flush=True)


def speedups(median):
    """The ratios the mixed-precision issue asks about, from the medians (missing ones left out):
    lmrt bf16 over lmrt fp32, lmrt fp32 over the faster of PyTorch eager and torch.compile (fp32),
    lmrt bf16 over the faster PyTorch autocast bf16 run."""
    out = {}
    def best(*impls):
        got = [median[i] for i in impls if i in median]
        return min(got) if got else None
    fp32, bf16 = best("lmrt", "lmrt-unfused"), median.get("lmrt-bf16")
    torch_fp32, torch_bf16 = best("pytorch-eager", "pytorch-compile"), best("pytorch-autocast", "pytorch-compile-autocast")
    if fp32 and bf16:
        out["lmrt_bf16_over_lmrt_fp32"] = round(fp32 / bf16, 3)
    if fp32 and torch_fp32:
        out["lmrt_fp32_over_best_torch_fp32"] = round(torch_fp32 / fp32, 3)
    if bf16 and torch_bf16:
        out["lmrt_bf16_over_best_torch_bf16"] = round(torch_bf16 / bf16, 3)
    return out

if __name__ == "__main__":
    main()

"""The CPU roofline benchmark (driven by bench/roofline.sh): for each model configuration,
compiles the plan with lmc, trains N steps with lmrt (every variant of LMRT_VARIANTS) and
with PyTorch eager (bench/torch_train_gpt.py, the same GPT), times OpenBLAS sgemm on square
matrices right before and right after each implementation's run (the machine's speed drifts
over minutes on a shared host; the two readings bracket the run), and prints one JSON line per
(config, implementation):

  config, impl, step_time_s (mean over the steps after the warmup), tokens_per_s,
  plan_gflop_per_step (the plan's predicted FLOPs of one train step), achieved_gflops
  (plan FLOPs / step time, for PyTorch too: same model, same FLOPs), sgemm_gflops (the mean
  of sgemm_before and sgemm_after), fraction_of_sgemm (achieved / sgemm_gflops), timed_steps, threads, load_avg_1m (the machine's 1-minute load average
  after the config: on a shared machine, compare lines taken under similar load).

Logs (lmrt --profile tables, PyTorch output) go to runs/roofline/.

With --device cuda it is the GPU benchmark instead: GPT-2 124M at batch 8 x seq 1024
(config gpt2_b8t1024; --configs picks others), the plan compiled with --target cpu,cuda and
trained by `lmrt run --device cuda`, beside PyTorch eager on the same GPU in the same run, in
f32 (--tf32: both on TF32 tensor cores). Each line then has tokens_per_s and achieved_tflops
(plan FLOPs / step time) instead of the sgemm columns."""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# lmrt variants: (impl name, extra `lmc compile` flags).
LMRT_VARIANTS = [
    ("lmrt", []),                              # fusion on: generated kernels (docs/fusion.md)
    ("lmrt-unfused", ["--fusion=none"]),       # one library kernel per op, the reference mode
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
    # --device cuda: GPT-2 124M at the shape of the GPU benchmark.
    ("gpt2_b8t1024", "models/gpt2.lm", "small",
     dict(layers=12, d=768, heads=12, vocab=50257, seq=1024, ctx=1024, batch=8), (30, 10)),
]
CPU_CONFIGS = "nano,tiny,gpt2_b4t64,gpt2_b1t1024"
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


def plan_gflop(build, plan):
    out = run([f"{build}/bin/lmrt", "inspect", plan])
    m = re.search(r"flops per train step: ([0-9.]+) ([KMGT]?)FLOP", out)
    return float(m.group(1)) * {"": 1e-9, "K": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}[m.group(2)]


def cuda_main(a, build, workdir):
    """lmrt --device cuda and PyTorch eager on the same GPU, one JSON line each."""
    precision = "tf32" if a.tf32 else "f32"
    for name, model, preset, shape, (full, quick) in CONFIGS:
        if name not in a.configs.split(","):
            continue
        steps = quick if a.quick else full
        warmup = min(a.warmup, steps - 1)
        plan = os.path.join(workdir, f"{name}.cuda.plan")
        run([f"{build}/bin/lmc", "compile", model, "--preset", preset, "--target", "cpu,cuda", "-o", plan])
        gflop = plan_gflop(build, plan)
        metrics = os.path.join(workdir, f"{name}.cuda.metrics.jsonl")
        run([f"{build}/bin/lmrt", "run", plan, "--device", "cuda", "--data", a.data, "--steps", str(steps),
             "--eval-batches", "0", "--metrics", metrics, "--overwrite", "--out", os.path.join(workdir, f"{name}.cuda.safetensors"),
             *(["--tf32"] if a.tf32 else [])], log=os.path.join(workdir, f"{name}.cuda.log"))
        rows = [json.loads(line) for line in open(metrics)][warmup:]
        tokens = shape["batch"] * shape["seq"]
        results = [("lmrt-cuda", sum(tokens / r["tokens_per_s"] for r in rows) / len(rows), len(rows))]
        if not a.no_torch:
            out = run([sys.executable, "bench/torch_train_gpt.py", "--data", a.data, "--steps", str(steps),
                       "--warmup-steps", str(warmup), "--timing-json", "--device", "cuda",
                       *(["--tf32"] if a.tf32 else []), *[f"--{k}={v}" for k, v in shape.items()]],
                      log=os.path.join(workdir, f"{name}.torch-cuda.log"))
            t = json.loads(out.strip().splitlines()[-1])
            results.append(("pytorch-eager-cuda", t["step_time_s"], t["timed_steps"]))
        for impl, step_s, timed in results:
            print(json.dumps({"config": name, "impl": impl, "device": "cuda", "precision": precision,
                              "step_time_s": round(step_s, 6), "tokens_per_s": round(tokens / step_s, 1),
                              "plan_gflop_per_step": gflop, "achieved_tflops": round(gflop / step_s / 1e3, 2),
                              "timed_steps": timed}), flush=True)


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
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps at the start of each run")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    workdir = os.path.join(ROOT, "runs", "roofline")
    os.makedirs(workdir, exist_ok=True)
    if a.configs is None:
        a.configs = CUDA_CONFIGS if a.device == "cuda" else CPU_CONFIGS
    if a.device == "cuda":
        return cuda_main(a, build, workdir)
    wanted = a.configs.split(",")
    for name, model, preset, shape, (full, quick) in CONFIGS:
        if name not in wanted:
            continue
        steps = (quick if a.quick else full)
        warmup = min(a.warmup, steps - 1)
        seconds = 0.3 if a.quick else 0.6
        rate = sgemm_rate(build, a.threads, seconds)
        results = []
        for impl, flags in LMRT_VARIANTS:
            plan = os.path.join(workdir, f"{name}.{impl}.plan")
            run([f"{build}/bin/lmc", "compile", model, "--preset", preset, *flags, "-o", plan])
            rows, gflop = lmrt_step(build, plan, a.data, steps, warmup, a.threads, workdir, f"{name}.{impl}")
            tokens = shape["batch"] * shape["seq"]
            step_s = sum(tokens / r["tokens_per_s"] for r in rows) / len(rows)
            after = sgemm_rate(build, a.threads, seconds)
            results.append((impl, step_s, len(rows), rate, after))
            rate = after
        if not a.no_torch:
            out = run([sys.executable, "bench/torch_train_gpt.py", "--data", a.data, "--steps", str(steps),
                       "--warmup-steps", str(warmup), "--timing-json", "--threads", str(a.threads),
                       *[f"--{k}={v}" for k, v in shape.items()]], log=os.path.join(workdir, f"{name}.torch.log"))
            t = json.loads(out.strip().splitlines()[-1])
            after = sgemm_rate(build, a.threads, seconds)
            results.append(("pytorch-eager", t["step_time_s"], t["timed_steps"], rate, after))
        load = round(os.getloadavg()[0], 2)
        for impl, step_s, timed, before, after in results:
            achieved = gflop / step_s
            roof = (before + after) / 2
            print(json.dumps({"config": name, "impl": impl, "step_time_s": round(step_s, 6),
                              "tokens_per_s": round(shape["batch"] * shape["seq"] / step_s, 1),
                              "plan_gflop_per_step": gflop, "achieved_gflops": round(achieved, 2),
                              "sgemm_gflops": round(roof, 2), "sgemm_before": before, "sgemm_after": after,
                              "fraction_of_sgemm": round(achieved / roof, 3),
                              "timed_steps": timed, "threads": a.threads, "load_avg_1m": load}), flush=True)


if __name__ == "__main__":
    main()

"""Kills `lmrt run` with SIGKILL at random moments while it checkpoints every step,
and checks after every kill that the newest checkpoint on disk loads (the resume
skips nothing as corrupted), then resumes to the end and checks that the final
weights and metrics are byte-identical to an uninterrupted run's.

usage: kill_resume.py KILLS REFERENCE_WEIGHTS REFERENCE_METRICS WORKDIR -- lmrt run ARGS...
ARGS must not name --out, --metrics or --checkpoint-dir (this script adds them)."""
import filecmp
import os
import random
import shutil
import subprocess
import sys
import time

kills = int(sys.argv[1])
ref_weights, ref_metrics, work = sys.argv[2:5]
base = sys.argv[sys.argv.index("--") + 1:]
here = os.path.dirname(os.path.abspath(__file__))
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
ckpt, metrics, out = (os.path.join(work, n) for n in ("ck", "m.jsonl", "w.safetensors"))
rng = random.Random(20240520)


def command():
    cmd = base + ["--out", out, "--metrics", metrics, "--checkpoint-dir", ckpt, "--checkpoint-every", "1",
                  "--keep", "3"]
    has = os.path.isdir(ckpt) and any(n.startswith("step-") and not n.endswith((".tmp", ".old"))
                                      for n in os.listdir(ckpt))
    return cmd + (["--resume", ckpt] if has else ["--overwrite"])


done = 0
while done < kills:
    proc = subprocess.Popen(command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(rng.uniform(0.05, 0.6))
    if proc.poll() is not None:  # finished before the kill: start over, the kill did not happen
        text = proc.stdout.read()
        if proc.returncode != 0:
            sys.exit(f"lmrt failed:\n{text}")
        if "skipping" in text:
            sys.exit(f"a resume skipped a checkpoint:\n{text}")
        shutil.rmtree(ckpt)
        os.remove(metrics)
        continue
    proc.kill()
    text = proc.stdout.read()
    proc.wait()
    if "skipping" in text:
        sys.exit(f"a resume skipped a corrupted checkpoint after a kill:\n{text}")
    done += 1
    print(f"kill {done}: {text.strip().splitlines()[-1] if text.strip() else '(no output yet)'}")

final = subprocess.run(command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
if final.returncode != 0 or "skipping" in final.stdout:
    sys.exit(f"final resume failed:\n{final.stdout}")
if not filecmp.cmp(out, ref_weights, shallow=False):
    sys.exit(f"{out} differs from {ref_weights}")
check = subprocess.run([sys.executable, os.path.join(here, "same_run.py"), ref_metrics, metrics])
if check.returncode != 0:
    sys.exit("metrics differ")
print(f"kill_resume: {kills} kills, final weights and metrics identical")

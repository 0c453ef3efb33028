"""Sends SIGTERM or SIGINT to a running `lmrt run` once it has done a few steps, and
checks the documented reaction: the current step finishes, a checkpoint of it is
written, the process exits with status 0 (or 128 + signal when there is no
--checkpoint-dir, since nothing was saved) and says how to continue.

usage: signal_run.py TERM|INT EXPECTED_STATUS METRICS -- lmrt run ... --metrics METRICS ..."""
import json
import os
import signal
import subprocess
import sys
import time

sig = getattr(signal, "SIG" + sys.argv[1])
expected = int(sys.argv[2])
metrics = sys.argv[3]
cmd = sys.argv[sys.argv.index("--") + 1:]

if os.path.exists(metrics):
    os.remove(metrics)
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
deadline = time.time() + 120
while time.time() < deadline:  # wait for the third step's metrics line
    if os.path.exists(metrics) and open(metrics).read().count("\n") >= 3:
        break
    if proc.poll() is not None:
        sys.exit("lmrt ended before the signal:\n" + proc.stdout.read())
    time.sleep(0.01)
else:
    proc.kill()
    sys.exit("no third step within 120 s")
proc.send_signal(sig)
out, _ = proc.communicate(timeout=120)
sys.stdout.write(out)
if proc.returncode != expected:
    sys.exit(f"exit status {proc.returncode}, expected {expected}")
last = json.loads(open(metrics).read().splitlines()[-1])["step"]
print(f"signal_run: last metrics step {last}")

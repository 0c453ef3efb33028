"""Rewrites a training shard in place while `lmrt run` uses it (once the run has done
a few steps) and checks the documented outcome: a clear error naming the data, after
a checkpoint of the last complete step, rather than death by SIGBUS.

usage: shard_change.py SHARD METRICS -- lmrt run ... --metrics METRICS ..."""
import os
import subprocess
import sys
import time

shard, metrics = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
deadline = time.time() + 120
while time.time() < deadline:
    if os.path.exists(metrics) and open(metrics).read().count("\n") >= 3:
        break
    if proc.poll() is not None:
        sys.exit("lmrt ended before the shard changed:\n" + proc.stdout.read())
    time.sleep(0.01)
with open(shard, "r+b") as f:  # in place: the mapping now runs past the end of the file
    f.truncate(os.path.getsize(shard) // 2)
out, _ = proc.communicate(timeout=120)
sys.stdout.write(out)
print(f"shard_change: exit status {proc.returncode}")

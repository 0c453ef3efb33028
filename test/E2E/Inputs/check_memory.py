"""Checks the `memory:` line of `lmrt run`: the peak RSS the run added to the process as it
started (libraries loaded, no plan yet) within a tolerance of the plan's predicted peak.
Reads the run's output on stdin."""
import re
import sys

tol = float(sys.argv[1]) if len(sys.argv) > 1 else 0.10
text = sys.stdin.read()
m = re.search(r"memory: peak RSS (\d+) bytes \((\d+) at start\), plan predicted (\d+) bytes", text)
if not m:
    sys.exit("no 'memory: peak RSS N bytes (S at start), plan predicted M bytes' line in:\n" + text[-2000:])
peak, start, pred = int(m.group(1)), int(m.group(2)), int(m.group(3))
rss = peak - start
err = (rss - pred) / pred
print(f"peak RSS {peak / 2**20:.1f} MiB, {start / 2**20:.1f} MiB of it at start; the run's "
      f"{rss / 2**20:.1f} MiB against the predicted {pred / 2**20:.1f} MiB, {100 * err:+.1f}%")
if abs(err) > tol:
    sys.exit(f"peak RSS is {100 * err:+.1f}% off the prediction (tolerance {100 * tol:.0f}%)")
print("memory: ok")

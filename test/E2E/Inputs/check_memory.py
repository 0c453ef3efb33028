"""Checks the `memory:` line of `lmrt run`: measured peak RSS within a tolerance of the
plan's predicted peak. Reads the run's output on stdin."""
import re
import sys

tol = float(sys.argv[1]) if len(sys.argv) > 1 else 0.10
text = sys.stdin.read()
m = re.search(r"memory: peak RSS (\d+) bytes, plan predicted (\d+) bytes", text)
if not m:
    sys.exit("no 'memory: peak RSS N bytes, plan predicted M bytes' line in:\n" + text[-2000:])
rss, pred = int(m.group(1)), int(m.group(2))
err = (rss - pred) / pred
print(f"peak RSS {rss / 2**20:.1f} MiB, predicted {pred / 2**20:.1f} MiB, {100 * err:+.1f}%")
if abs(err) > tol:
    sys.exit(f"peak RSS is {100 * err:+.1f}% off the prediction (tolerance {100 * tol:.0f}%)")
print("memory: ok")

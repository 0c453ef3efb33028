"""Sums the parameters `lmrt inspect` lists, all of them and those whose names
start with none of the --exclude prefixes (a model's part without its head).

Usage: lmrt inspect PLAN | count_params.py [--exclude PREFIX...]
Prints `all N` and `without PREFIX...: M` with thousands separators."""
import argparse
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--exclude", nargs="*", default=[])
a = ap.parse_args()
total = kept = 0
in_params = False
# Read everything before parsing: stopping early would close the pipe while
# `lmrt inspect` still writes, and pipefail turns its SIGPIPE into a failure.
for line in sys.stdin.read().splitlines(keepends=True):
    if line.startswith("params:"):
        in_params = True
        continue
    if in_params and not line.startswith("  "):
        break
    m = re.match(r"\s+(\S+)\s+\w+\[([0-9, ]*)\]", line)
    if in_params and m:
        n = 1
        for d in filter(None, m.group(2).split(",")):
            n *= int(d)
        total += n
        if not any(m.group(1).startswith(p) for p in a.exclude):
            kept += n
print(f"all {total:,}")
print(f"without {' '.join(a.exclude)}: {kept:,}")

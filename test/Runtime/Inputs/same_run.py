"""Checks that two `lmrt run --metrics` files describe the same run: the same steps
1..N in order, and every value but the timing (tokens_per_s) identical as written.
Used to show that a resumed run reproduces an uninterrupted one bit for bit."""
import json
import sys

a, b = sys.argv[1], sys.argv[2]


def rows(path):
    out = []
    for line in open(path):
        r = json.loads(line)
        r.pop("tokens_per_s")
        out.append(r)
    return out


ra, rb = rows(a), rows(b)
steps = [r["step"] for r in rb]
if steps != list(range(1, len(rb) + 1)):
    sys.exit(f"{b}: steps are {steps}, not 1..{len(rb)} in order")
if len(ra) != len(rb):
    sys.exit(f"{a} has {len(ra)} lines, {b} has {len(rb)}")
for x, y in zip(ra, rb):
    if x != y:
        sys.exit(f"step {x['step']} differs:\n  {a}: {x}\n  {b}: {y}")
print(f"same run: {len(ra)} steps")

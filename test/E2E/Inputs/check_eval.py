"""Compares two `lmrt eval` reports (test/E2E/tensor-parallel-eval.test): the same
lines in the same order, each "name: number ..." line's first number within TOL
relative of the other's, every other line equal.

  check_eval.py A.txt B.txt TOL

Prints the largest relative difference; exits non-zero naming the first line out
of tolerance."""
import re
import sys

NUMBER = re.compile(r"^([^:]+): (-?[0-9.]+(?:e[-+]?[0-9]+)?)(.*)$")


def main(a_path, b_path, tol):
    a = open(a_path).read().splitlines()
    b = open(b_path).read().splitlines()
    if len(a) != len(b) or not a:
        sys.exit(f"{a_path} has {len(a)} lines, {b_path} {len(b)}")
    worst = 0.0
    numbers = 0
    for x, y in zip(a, b):
        mx, my = NUMBER.match(x), NUMBER.match(y)
        if not mx or not my or mx.group(1) == "data":
            if x != y:
                sys.exit(f"{x!r} vs {y!r}")
            continue
        if mx.group(1) != my.group(1):
            sys.exit(f"{x!r} vs {y!r}")
        u, v = float(mx.group(2)), float(my.group(2))
        r = abs(u - v) / max(abs(v), 1e-30)
        worst = max(worst, r)
        numbers += 1
        if r > tol:
            sys.exit(f"{mx.group(1)}: {u!r} vs {v!r}, relative {r:.3e} > {tol:g}")
    if not numbers:
        sys.exit(f"{a_path}: no numbers to compare")
    print(f"{numbers} numbers; max relative difference {worst:.2e}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))

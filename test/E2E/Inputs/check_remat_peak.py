"""Reads lmc's summary lines (one file per remat policy, named on the command
line as POLICY=FILE) and checks that full and selective predict a lower peak
than none: rematerialization must lower the memory plan's peak."""
import re
import sys

peaks = {}
for arg in sys.argv[1:]:
    policy, path = arg.split("=", 1)
    text = open(path).read()
    m = re.search(r"predicted peak memory [^(]*\(([0-9,]+) bytes\)", text)
    if not m:
        sys.exit(f"{path}: no predicted peak in lmc's output:\n{text}")
    peaks[policy] = int(m.group(1).replace(",", ""))
ok = True
for policy in ("selective", "full"):
    if policy in peaks:
        lower = peaks[policy] < peaks["none"]
        ok &= lower
        print(f"{policy}: {peaks[policy]} bytes {'<' if lower else '>='} none {peaks['none']}")
if "full" in peaks and "selective" in peaks and not peaks["full"] <= peaks["selective"]:
    ok = False
    print(f"full {peaks['full']} > selective {peaks['selective']}")
print("remat peaks: ok" if ok else "remat peaks: FAILED")
sys.exit(0 if ok else 1)

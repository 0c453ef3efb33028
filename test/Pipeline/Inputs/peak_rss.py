"""Runs a command and fails when its peak resident memory exceeds a bound:
peak_rss.py MIB -- COMMAND... (test/Pipeline/compile-depth.test). Memory, unlike
time, does not drift with the load of a shared machine."""
import resource
import subprocess
import sys

bound_mib = float(sys.argv[1])
assert sys.argv[2] == "--", "usage: peak_rss.py MIB -- COMMAND..."
status = subprocess.run(sys.argv[3:]).returncode
if status != 0:
    sys.exit(f"the command failed with status {status}")
peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
if peak_mib > bound_mib:
    sys.exit(f"peak RSS {peak_mib:.0f} MiB, above the bound of {bound_mib:.0f} MiB")
print(f"peak RSS under {bound_mib:.0f} MiB")

"""Tests one run per --checkpoint-dir: while a first `lmrt run` (started here in the
background, checkpointing every step) holds the directory, a second run on it, with
--overwrite or --resume, is refused naming the holder's PID, and touches nothing (the
first run's checkpoints and its in-flight writes survive and it finishes normally);
once the holder is killed with SIGKILL, its lock is taken over by the next run.

usage: lock_run.py DIR -- LMRT_RUN_COMMAND... (without --checkpoint-dir)"""
import os
import signal
import subprocess
import sys
import time

sep = sys.argv.index("--")
ck = sys.argv[1]
base = sys.argv[sep + 1:]
lock = os.path.join(ck, "lmrt.lock")


def start(extra):
    return subprocess.Popen(base + ["--checkpoint-dir", ck, "--checkpoint-every", "1"] + extra,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_checkpoint(proc):
    for _ in range(600):
        if os.path.isdir(ck) and any(n.startswith("step-") and not n.endswith((".tmp", ".old"))
                                     for n in os.listdir(ck)):
            return
        if proc.poll() is not None:
            sys.exit("the first run ended early:\n" + proc.stdout.read())
        time.sleep(0.05)
    sys.exit("no checkpoint after 30 s")


first = start(["--steps", "100000"])
wait_for_checkpoint(first)
print("lock:", open(lock).read().strip().replace(str(first.pid), "<first>"))
for label, extra in (("--overwrite", ["--steps", "100000", "--overwrite"]), ("--resume", ["--resume", ck])):
    second = start(extra)
    out, _ = second.communicate(timeout=60)
    print("second run", label, "exit", second.returncode)
    print(out.strip().replace(str(first.pid), "<first>").replace(ck, "CK"))
if first.poll() is not None:
    sys.exit("the first run died while the second tried:\n" + first.stdout.read())
before = sorted(n for n in os.listdir(ck) if n.startswith("step-"))
print("first run still running:", first.poll() is None, "| its checkpoints:", len(before) > 0)
first.kill()  # SIGKILL: no cleanup, the lock file stays
first.wait()
third = start(["--resume", ck, "--stop-at", "1000000000"])
time.sleep(0.5)
third.send_signal(signal.SIGTERM)
out, _ = third.communicate(timeout=120)
print("after the holder's SIGKILL: exit", third.returncode, "|", "resumed from" in out, "|", "stopped by SIGTERM" in out)

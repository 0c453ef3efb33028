"""Checks `lmrt sample --stop`: picks a stop string from the middle of a greedy
completion (JSON line in argv[1]), reruns with it, and asserts the completion ends
right before its first occurrence with finish_reason "stop", in JSON and in text.

    sample_stop.py GREEDY.jsonl LMRT PLAN WEIGHTS PROMPT TOKENS
"""
import json
import subprocess
import sys

greedy_file, lmrt, plan, weights, prompt, tokens = sys.argv[1:7]
full = json.loads(open(greedy_file).readline())["completion"]
assert len(full) > 30, full
stop = full[20:23]
expected = full[: full.index(stop)]
base = [lmrt, "sample", plan, "--weights", weights, "--prompt", prompt, "--tokens", tokens, "--temperature", "0",
        "--stop", stop, "--stop", "\x01never\x01"]
got = json.loads(subprocess.run(base + ["--format", "json"], check=True, capture_output=True).stdout)
assert got["completion"] == expected, (got, expected, stop)
assert got["finish_reason"] == "stop", got
assert got["tokens"] == len(expected) + len(stop), got  # bytes: one token each
text = subprocess.run(base, check=True, capture_output=True).stdout.decode("utf-8", "replace")
assert text == prompt + expected + "\n", (text, expected)
print("stop ok:", repr(stop), len(expected), "bytes")

#!/usr/bin/env python3
"""`lmc` for the GPU machine, which cannot run the real one (lmc links MLIR, which is
not there): records the plans the GPU tests and the benchmark compile, here, and
replays them there, so the tests' `lmc compile ...` lines run unchanged on both.

  record  (scripts/gpu-bundle.sh's dry run): with LMC_PLAN_RECORD=DIR and
          LMC_REAL_LMC=PATH set, runs the real lmc and stores what it wrote (the plan
          given by -o/--output, its stdout, stderr and exit code) in DIR under a key;
  replay  (the bundle's bin/lmc, which sets LMC_PLAN_DIR to the bundle's plans/): looks
          the key up in LMC_PLAN_DIR, writes the recorded plan where -o says, prints
          the recorded output and exits with its code; a command that was never
          recorded is an error that says so.

The key is the argument list without the output path, with every argument that names
a file replaced by a hash of the file's contents: the same command on the same .lm
source gets the same plan wherever the files lie (%t differs from machine to machine),
and an edited source or another -D value is another key."""
import hashlib
import json
import os
import shutil
import subprocess
import sys


def split_output(args):
    """(arguments without the output option, the output path or None)."""
    rest, out, i = [], None, 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "--output") and i + 1 < len(args):
            out, i = args[i + 1], i + 2
            continue
        if a.startswith("--output=") or a.startswith("-o="):
            out, i = a.split("=", 1)[1], i + 1
            continue
        rest.append(a)
        i += 1
    if out is None and rest[:1] == ["compile"]:
        # lmc compile's default: FILE's stem + .plan in the working directory.
        inputs = [a for a in rest[1:] if os.path.isfile(a)]
        if inputs:
            out = os.path.splitext(os.path.basename(inputs[0]))[0] + ".plan"
    return rest, out


def key_of(args):
    parts = []
    for a in args:
        if os.path.isfile(a):
            with open(a, "rb") as f:
                parts.append("file:" + hashlib.sha256(f.read()).hexdigest())
        else:
            parts.append("arg:" + a)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def record(args, out, key, store, real):
    res = subprocess.run([real] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.makedirs(store, exist_ok=True)
    entry = {"args": args, "out": out, "rc": res.returncode,
             "stdout": res.stdout.decode("utf-8", "replace"), "stderr": res.stderr.decode("utf-8", "replace")}
    # Tests running in parallel may record the same key: write aside, then rename.
    if res.returncode == 0 and out and os.path.isfile(out):
        shutil.copyfile(out, os.path.join(store, f"{key}.plan.{os.getpid()}"))
        os.replace(os.path.join(store, f"{key}.plan.{os.getpid()}"), os.path.join(store, key + ".plan"))
        entry["plan"] = key + ".plan"
    with open(os.path.join(store, f"{key}.json.{os.getpid()}"), "w") as f:
        json.dump(entry, f, indent=1)
    os.replace(os.path.join(store, f"{key}.json.{os.getpid()}"), os.path.join(store, key + ".json"))
    sys.stdout.write(entry["stdout"])
    sys.stderr.write(entry["stderr"])
    return res.returncode


def replay(args, out, key, store):
    path = os.path.join(store, key + ".json")
    if not os.path.isfile(path):
        sys.stderr.write("lmc: error: this is the GPU bundle's lmc, which replays plans compiled when the bundle "
                         f"was made (the real lmc needs MLIR); none was recorded for `lmc {' '.join(args)}` "
                         f"(key {key}, looked in {store}). Rebuild the bundle (scripts/gpu-bundle.sh) from the "
                         "tree these tests come from.\n")
        return 1
    with open(path) as f:
        entry = json.load(f)
    text_out, text_err = entry["stdout"], entry["stderr"]
    if entry.get("plan"):
        if not out:
            sys.stderr.write("lmc: error: a plan was recorded but this command names no output\n")
            return 1
        shutil.copyfile(os.path.join(store, entry["plan"]), out)
        if entry["out"]:
            text_out, text_err = text_out.replace(entry["out"], out), text_err.replace(entry["out"], out)
    sys.stdout.write(text_out)
    sys.stderr.write(text_err)
    return entry["rc"]


def main():
    args = sys.argv[1:]
    rest, out = split_output(args)
    key = key_of(rest)
    if os.environ.get("LMC_PLAN_RECORD"):
        real = os.environ.get("LMC_REAL_LMC")
        if not real:
            sys.exit("lmc_replay: LMC_PLAN_RECORD is set but LMC_REAL_LMC (the real lmc) is not")
        return record(args, out, key, os.environ["LMC_PLAN_RECORD"], real)
    if not os.environ.get("LMC_PLAN_DIR"):
        sys.exit("lmc_replay: set LMC_PLAN_DIR (replay) or LMC_PLAN_RECORD and LMC_REAL_LMC (record)")
    return replay(args, out, key, os.environ["LMC_PLAN_DIR"])


if __name__ == "__main__":
    sys.exit(main())

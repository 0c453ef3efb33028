"""Reads an `lmrt run --tensorboard DIR` event file with TensorBoard's own code
(the `tensorboard` package from PyPI) and checks it against the run's --metrics.

  read_tensorboard.py DIR METRICS.jsonl
      1. TensorBoard's record reader (which checks every masked CRC32C and
         raises on a bad one) reads every record, and each parses as an Event;
      2. TensorBoard's EventAccumulator (what the TensorBoard server uses) loads
         DIR, and every scalar of every step equals the metrics file's value
         (as float32, the type TensorBoard stores);
      prints the tags and counts.
  read_tensorboard.py --flip OFFSET DIR
      flips one byte of the event file and expects the reader to refuse it.
"""
import glob
import json
import math
import os
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow

import numpy as np


def event_file(d):
    files = glob.glob(os.path.join(d, "*tfevents*"))
    if len(files) != 1:
        sys.exit(f"expected one event file in {d}, found {files}")
    return files[0]


def read_records(path):
    reader = pywrap_tensorflow.PyRecordReader_New(path, 0, "", None)
    events = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return events
        e = event_pb2.Event()
        e.ParseFromString(reader.record())
        events.append(e)


def main(argv):
    if argv[0] == "--flip":
        path = event_file(argv[2])
        data = bytearray(open(path, "rb").read())
        data[int(argv[1])] ^= 0x40
        open(path, "wb").write(bytes(data))
        try:
            read_records(path)
        except errors.DataLossError as e:
            print("refused:", e.message)
            return
        sys.exit("a flipped byte went unnoticed")

    d, metrics = argv
    path = event_file(d)
    events = read_records(path)
    if events[0].file_version != "brain.Event:2":
        sys.exit(f"first event is not the file version: {events[0]}")
    print(f"records: {len(events)}, crc ok, first: file_version {events[0].file_version}")

    acc = EventAccumulator(d, size_guidance={"scalars": 0})
    acc.Reload()
    tags = sorted(acc.Tags()["scalars"])
    print("tags:", " ".join(tags))
    rows = [json.loads(line) for line in open(metrics)]
    key = {"train/loss": "loss", "train/lr": "lr", "train/grad_norm": "grad_norm",
           "train/tokens_per_s": "tokens_per_s", "val/loss": "val_loss"}
    for tag in tags:
        got = {s.step: s.value for s in acc.Scalars(tag)}
        if tag == "train/gflops_per_s":
            if not all(v > 0 and math.isfinite(v) for v in got.values()) or len(got) != len(rows):
                sys.exit(f"{tag}: {got}")
            print(f"{tag}: {len(got)} steps, all positive")
            continue
        want = {r["step"]: r[key[tag]] for r in rows if key[tag] in r}
        if sorted(got) != sorted(want):
            sys.exit(f"{tag}: steps {sorted(got)} != metrics steps {sorted(want)}")
        for step, v in want.items():
            # tokens_per_s is measured once and printed rounded to 9 digits in JSON.
            if not math.isclose(got[step], float(np.float32(v)), rel_tol=1e-6):
                sys.exit(f"{tag} at step {step}: event file {got[step]} != metrics {v}")
        print(f"{tag}: {len(got)} steps, equal to the metrics file")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Checks `lmc explain --format json` (docs/explain.md): the keys, that the
memory terms add up to the predicted peak, that the tensors live at the peak
add up to the peak's live bytes and to their three kinds, that the FLOPs per
family add up; with a second file, that its saved bytes are below the first's.
Usage: check_explain.py EXPLAIN.json [FEWER_SAVED.json]"""
import json
import sys


def load(path):
    with open(path) as f:
        d = json.load(f)
    for key in ("source", "remat", "fusion", "predicted_peak_bytes", "memory", "train_step", "flops"):
        assert key in d, f"missing key {key}"
    m = d["memory"]
    total = (m["params_bytes"] + m["grads_bytes"] + m["adamw_bytes"] + m["inputs_bytes"] + m["arena_bytes"]
             + m["matmul_scratch_bytes"] + m["loss_scratch_bytes"])
    assert total == m["total_bytes"] == d["predicted_peak_bytes"], (total, m["total_bytes"], d["predicted_peak_bytes"])
    t = d["train_step"]
    live = sum(x["bytes"] for x in t["tensors"])
    assert live == t["peak_live_bytes"] == t["saved_bytes"] + t["recomputed_bytes"] + t["temporary_bytes"], live
    assert t["peak_live_bytes"] <= t["arena_bytes"] <= m["arena_bytes"]
    for kind in ("saved", "recomputed", "temporary"):
        assert sum(x["bytes"] for x in t["tensors"] if x["why"] == kind) == t[kind + "_bytes"], kind
    for x in t["tensors"]:
        assert set(x) >= {"buffer", "type", "shape", "bytes", "why", "op", "loc", "live_steps"}, x
        assert x["live_steps"][0] <= t["peak_step"] <= x["live_steps"][1], x
    fams = d["flops"]["families"]
    assert list(fams) == ["matmul", "attention", "norm", "elementwise", "loss", "other"], list(fams)
    assert sum(f["flops"] for f in fams.values()) == d["flops"]["total"]
    assert sum(f["steps"] for f in fams.values()) == t["steps"]
    st = d["step_time"]
    assert list(st["families"]) == list(fams), list(st["families"])
    assert abs(sum(st["families"].values()) - st["kernels_seconds"]) <= 1e-6 * st["kernels_seconds"], st
    assert abs(st["kernels_seconds"] + st["optimizer_seconds"] - st["predicted_seconds"]) <= 1e-6 * st["predicted_seconds"]
    assert st["predicted_seconds"] > 0 and st["optimizer_seconds"] > 0, st
    assert set(st["rates"]) == {"measured", "file", "device", "threads"}, st["rates"]
    return d


first = load(sys.argv[1])
print(f"ok: {first['predicted_peak_bytes']} bytes, saved {first['train_step']['saved_bytes']}")
if len(sys.argv) > 2:
    second = load(sys.argv[2])
    assert second["train_step"]["saved_bytes"] < first["train_step"]["saved_bytes"], "saved bytes did not drop"
    assert second["train_step"]["recomputed_bytes"] > 0
    print(f"ok: {second['remat']} saves {second['train_step']['saved_bytes']} bytes")

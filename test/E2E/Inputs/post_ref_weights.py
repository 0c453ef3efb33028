"""For `cmp` in post-training.test: writes DPO's reference (the `ref.` tensors of
DPO_OUT, renamed without the prefix) and the SFT weights it loaded (SFT, every
tensor) to two safetensors files by the same writer (names sorted, no metadata),
so that the files are byte-identical iff the reference stayed bit for bit as
loaded. Standard library only.

  post_ref_weights.py DPO_OUT.safetensors SFT.safetensors REF_OUT SFT_OUT
"""
import json
import struct
import sys


def read(path):
    """{name: (dtype, shape, raw bytes)}."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    out = {}
    for name, t in json.loads(raw[8:8 + n]).items():
        if name != "__metadata__":
            a, b = t["data_offsets"]
            out[name] = (t["dtype"], t["shape"], raw[8 + n + a:8 + n + b])
    return out


def write(path, tensors):
    header, data = {}, b""
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, sort_keys=True).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


dpo, sft, ref_out, sft_out = sys.argv[1:5]
ref = {n[4:]: t for n, t in read(dpo).items() if n.startswith("ref.")}
if not ref:
    sys.exit(f"{dpo}: no ref. tensors")
write(ref_out, ref)
write(sft_out, read(sft))

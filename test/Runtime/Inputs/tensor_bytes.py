"""Compares tensors between safetensors files by their bytes, for the --init tests.

    tensor_bytes.py same FILE_A NAME_A FILE_B NAME_B     exit 1 unless the bytes are equal
    tensor_bytes.py differ FILE_A NAME_A FILE_B NAME_B   exit 1 if they are equal
"""
import json
import struct
import sys


def tensor(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        if name not in header:
            sys.exit(f"{path}: no tensor {name!r}")
        begin, end = header[name]["data_offsets"]
        f.seek(8 + n + begin)
        return f.read(end - begin)


mode, fa, na, fb, nb = sys.argv[1:6]
equal = tensor(fa, na) == tensor(fb, nb)
if (mode == "same") != equal:
    sys.exit(f"{fa}:{na} and {fb}:{nb} are {'equal' if equal else 'different'}, expected {mode}")

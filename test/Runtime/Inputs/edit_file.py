"""Damages a file the way a test needs: `flip PATH OFFSET` xors one byte (a negative
offset counts from the end), `truncate PATH BYTES` cuts it, `json PATH KEY VALUE`
sets a top-level JSON field (VALUE parsed as JSON) keeping the rest of the text,
`nan PATH TENSOR INDEX` writes a NaN into element INDEX (flat) of an F32 tensor of
a safetensors file, `fill PATH TENSOR VALUE` sets every element of one to VALUE."""
import json
import re
import struct
import sys

cmd, path = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
if cmd == "flip":
    data[int(sys.argv[3])] ^= 0x5A
elif cmd == "truncate":
    data = data[:int(sys.argv[3])]
elif cmd == "json":
    key, value = sys.argv[3], json.loads(sys.argv[4])
    text, n = re.subn(r'("%s": )[^,\n]*' % re.escape(key), lambda m: m.group(1) + json.dumps(value),
                      data.decode(), count=1)
    if n != 1:
        sys.exit(f"{path}: no top-level field {key}")
    data = bytearray(text.encode())
elif cmd == "nan":
    (n,) = struct.unpack("<Q", data[:8])
    info = json.loads(data[8:8 + n])[sys.argv[3]]
    assert info["dtype"] == "F32"
    at = 8 + n + info["data_offsets"][0] + 4 * int(sys.argv[4])
    data[at:at + 4] = struct.pack("<f", float("nan"))
elif cmd == "fill":
    (n,) = struct.unpack("<Q", data[:8])
    info = json.loads(data[8:8 + n])[sys.argv[3]]
    assert info["dtype"] == "F32"
    lo, hi = info["data_offsets"]
    data[8 + n + lo:8 + n + hi] = struct.pack("<f", float(sys.argv[4])) * ((hi - lo) // 4)
else:
    sys.exit(f"unknown command {cmd}")
open(path, "wb").write(data)

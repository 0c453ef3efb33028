"""Damages a file the way a test needs: `flip PATH OFFSET` xors one byte (a negative
offset counts from the end), `truncate PATH BYTES` cuts it, `json PATH KEY VALUE`
sets a top-level JSON field (VALUE parsed as JSON) keeping the rest of the text,
`nan PATH TENSOR INDEX` writes a NaN into element INDEX (flat) of an F32 tensor of
a safetensors file, `fill PATH TENSOR VALUE` sets every element of one to VALUE,
`forge STEPDIR FROMDIR [FILE]` puts FROMDIR's state.safetensors (or FILE, a sharded
checkpoint's shard) into checkpoint STEPDIR and rewrites STEPDIR's meta.json to match
it (the file's size and FNV-1a, and the metadata's own checksum): a forgery only the
cross-checks can find, and `resum
META` recomputes a meta.json's own checksum after an edit."""
import json
import re
import struct
import sys

cmd, path = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read()) if cmd not in ("forge", "resum") else None
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
elif cmd in ("forge", "resum"):
    def fnv1a64(b):
        h = 0xcbf29ce484222325
        for x in b:
            h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        return h
    meta = path + "/meta.json" if cmd == "forge" else path
    text = open(meta).read()
    if cmd == "forge":
        name = sys.argv[4] if len(sys.argv) > 4 else "state.safetensors"
        state = open(sys.argv[3] + "/" + name, "rb").read()
        open(path + "/" + name, "wb").write(state)
        text = re.sub(r'("' + re.escape(name) + r'": \{"bytes": )\d+(, "fnv1a64": ")[0-9a-f]+', lambda m: m.group(1) + str(len(state)) + m.group(2) + "%016x" % fnv1a64(state), text)
    head = text[:text.rfind('"meta_fnv1a64"')]
    text = head + '"meta_fnv1a64": "%016x"\n}\n' % fnv1a64(head.encode())
    path, data = meta, bytearray(text.encode())
else:
    sys.exit(f"unknown command {cmd}")
open(path, "wb").write(data)

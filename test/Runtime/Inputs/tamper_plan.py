"""Changes one string of a plan file's payload to another of the same length and
recomputes the framing's FNV-1a checksum, as someone editing a signed plan would:
the plan still parses and validates; only its signature can tell.
usage: tamper_plan.py PLAN OLD NEW"""
import struct
import sys

path, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
assert len(old) == len(new)
data = bytearray(open(path, "rb").read())
(length,) = struct.unpack("<Q", data[12:20])
payload = data[20:20 + length]
at = payload.find(old)
if at < 0:
    sys.exit(f"{path}: no '{sys.argv[2]}' in the payload")
payload[at:at + len(old)] = new
h = 0xcbf29ce484222325
for x in payload:
    h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
open(path, "wb").write(bytes(data[:20]) + bytes(payload) + struct.pack("<Q", h))

"""Alters one byte of the first embedded kernel library image (an ELF shared
object) inside a plan file. With --refresh-checksum the plan's framing checksum
is recomputed, as a deliberate forger would, so only the library's own
checksum can catch the change.

Usage: tamper_kernels.py IN.plan OUT.plan [--refresh-checksum]"""
import struct
import sys

HEADER = 8 + 4 + 8  # magic, u32 version, u64 payload length


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    src, dst = sys.argv[1:3]
    refresh = "--refresh-checksum" in sys.argv[3:]
    blob = bytearray(open(src, "rb").read())
    (length,) = struct.unpack_from("<Q", blob, 12)
    payload = blob[HEADER : HEADER + length]
    elf = payload.find(b"\x7fELF")
    if elf < 0:
        print("no embedded ELF image in " + src)
        return 1
    payload[elf + 4096] ^= 0x01  # inside the code, well past the ELF header
    blob[HEADER : HEADER + length] = payload
    if refresh:
        struct.pack_into("<Q", blob, HEADER + length, fnv1a64(bytes(payload)))
    open(dst, "wb").write(blob)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Writes fuzz seeds in the foreign token formats from an LMC shard (scripts/fuzz.sh).

The layouts are the readers' (runtime/data/{shard.h,llmc_shard.cpp,megatron_dataset.cpp})
and the writers' they follow (llm.c's write_datafile, Megatron-LM's IndexedDatasetBuilder;
test/E2E/Inputs/foreign_shards.py writes full datasets the same way, with numpy).
Only the standard library, and at most `--max-tokens` tokens a seed: seeds stay small.

Usage:
  pack_seeds.py shard SHARD OUT_DIR     LMC shards with 2- and 4-byte tokens, and llm.c
                                        shards (GPT-2 uint16, LLaMA 3 uint32)
  pack_seeds.py megatron SHARD OUT_DIR  megatron_fuzzer inputs: u32 N | PREFIX.idx (N bytes) |
                                        PREFIX.bin, in several dtypes and sequence cuts
"""
import os
import struct
import sys

MEGATRON_CODES = {"uint8": (1, "B"), "int8": (2, "b"), "int16": (3, "h"), "int32": (4, "i"),
                  "int64": (5, "q"), "uint16": (8, "H")}


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


def read_lmc_shard(path, max_tokens):
    raw = open(path, "rb").read()
    assert raw[:8] == b"LMCSHARD", path
    _version, width, n, d = struct.unpack_from("<IIQQ", raw, 8)
    tokens = list(struct.unpack_from("<%d%s" % (n, "H" if width == 2 else "I"), raw, 32))
    starts = list(struct.unpack_from("<%dQ" % d, raw, 32 + n * width))
    tokens = tokens[:max_tokens]
    starts = [s for s in starts if s < len(tokens)] or [0]
    return tokens, starts


def lmc_shard(tokens, starts, width):
    body = b"LMCSHARD" + struct.pack("<IIQQ", 1, width, len(tokens), len(starts))
    body += struct.pack("<%d%s" % (len(tokens), "H" if width == 2 else "I"), *tokens)
    body += struct.pack("<%dQ" % len(starts), *starts)
    return body + struct.pack("<Q", fnv1a64(body))


def llmc_shard(tokens, magic, version, fmt):
    header = struct.pack("<3i", magic, version, len(tokens)) + bytes(4 * 253)
    return header + struct.pack("<%d%s" % (len(tokens), fmt), *tokens)


def megatron_input(tokens, starts, dtype, seqs_per_doc):
    code, fmt = MEGATRON_CODES[dtype]
    itemsize = struct.calcsize(fmt)
    ends = starts[1:] + [len(tokens)]
    lengths, document_indices = [], [0]
    for s, e in zip(starts, ends):
        n = e - s
        cuts = [n * k // seqs_per_doc for k in range(seqs_per_doc + 1)]
        lengths.extend(cuts[k + 1] - cuts[k] for k in range(seqs_per_doc))
        document_indices.append(len(lengths))
    pointers, at = [], 0
    for n in lengths:
        pointers.append(at)
        at += n * itemsize
    idx = b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, code, len(lengths), len(document_indices))
    idx += struct.pack("<%di" % len(lengths), *lengths)
    idx += struct.pack("<%dq" % len(pointers), *pointers)
    idx += struct.pack("<%dq" % len(document_indices), *document_indices)
    data = struct.pack("<%d%s" % (len(tokens), fmt), *tokens)
    return struct.pack("<I", len(idx)) + idx + data


def main(argv):
    max_tokens = 2048
    if len(argv) != 4 or argv[1] not in ("shard", "megatron"):
        sys.exit(__doc__)
    kind, shard, out = argv[1:]
    os.makedirs(out, exist_ok=True)
    tokens, starts = read_lmc_shard(shard, max_tokens)
    stem = os.path.splitext(os.path.basename(shard))[0]
    seeds = {}
    if kind == "shard":
        seeds["lmc-u16"] = lmc_shard(tokens, starts, 2)
        seeds["lmc-u32"] = lmc_shard(tokens, starts, 4)
        seeds["lmc-empty"] = lmc_shard([], [], 2)
        seeds["llmc-gpt2"] = llmc_shard(tokens, 20240520, 1, "H")
        seeds["llmc-llama3"] = llmc_shard(tokens, 20240801, 7, "I")
    else:
        for dtype in ("uint16", "int32", "uint8", "int64"):
            seeds["megatron-" + dtype] = megatron_input(tokens, starts, dtype, 1)
        seeds["megatron-int16-3seqs"] = megatron_input(tokens, starts, "int16", 3)
    for name, data in seeds.items():
        with open(os.path.join(out, "%s-%s" % (stem, name)), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv)

"""Writes token files the way Megatron-LM and llm.c write them, for lmrt's readers.

The writers lay files out as those projects' own writers do:
  - Megatron-LM, megatron/core/datasets/indexed_dataset.py (IndexedDatasetBuilder
    with add_item + end_document per document, then finalize / _IndexWriter):
    PREFIX.bin is every sequence's tokens back to back; PREFIX.idx is
    b"MMIDIDX\\x00\\x00", <Q version 1, <B dtype code, <Q sequence count,
    <Q document count (len(document_indices)), int32 lengths, int64 byte
    pointers, int64 document indices ([0] + sequence count after each document).
  - llm.c, dev/data/data_common.py write_datafile: 256 int32 header (magic
    20240520, version 1, token count; or 20240801, 7 for LLaMA 3) then the tokens
    as uint16 (uint32 for LLaMA 3).

Usage:
  foreign_shards.py megatron LMC_DIR OUT_DIR [--dtype uint16|int32|...] [--seqs-per-doc K]
      LMC_DIR/{train,val}.bin (LMC shards) -> OUT_DIR/{train,val}.{bin,idx}
  foreign_shards.py llmc LMC_DIR OUT_DIR [--name NAME] [--model gpt-2|llama-3] [--parts N]
      -> OUT_DIR/NAME_train.bin and OUT_DIR/NAME_val.bin (llm.c's naming); with
      --parts N the train tokens are cut into N shards NAME_train_000001.bin ...
      and val is NAME_val_000000.bin, as llm.c's fineweb.py names them
  foreign_shards.py corrupt KIND SRC_DIR OUT_DIR
      copies a Megatron or llm.c data directory and damages it (KIND below)
  foreign_shards.py same-losses A.jsonl B.jsonl
      exits non-zero unless both metrics files have the same steps and losses
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

MEGATRON_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5,
                  "float64": 6, "float32": 7, "uint16": 8}
LLMC = {"gpt-2": (20240520, 1, np.uint16), "llama-3": (20240801, 7, np.uint32)}


def read_lmc_shard(path):
    """(tokens, document starts) of an LMC shard (runtime/data/shard.h)."""
    raw = open(path, "rb").read()
    assert raw[:8] == b"LMCSHARD", path
    _version, width, n, d = struct.unpack_from("<IIQQ", raw, 8)
    tokens = np.frombuffer(raw, dtype=np.uint16 if width == 2 else np.uint32, count=n, offset=32)
    starts = np.frombuffer(raw, dtype=np.uint64, count=d, offset=32 + n * width)
    return tokens, [int(s) for s in starts]


def documents(tokens, starts):
    ends = starts[1:] + [len(tokens)]
    return [tokens[s:e] for s, e in zip(starts, ends)]


def write_megatron(prefix, docs, dtype, seqs_per_doc=1):
    """One sequence per document, as IndexedDatasetBuilder.add_item + end_document;
    with seqs_per_doc > 1, each document cut into that many sequences (sentences),
    as IndexedDatasetBuilder.add_document(tensor, lengths)."""
    np_dtype = getattr(np, dtype)
    lengths, document_indices = [], [0]
    with open(prefix + ".bin", "wb") as data:
        for doc in docs:
            arr = np.array(doc, dtype=np_dtype)
            data.write(arr.tobytes(order="C"))
            cuts = [arr.size * k // seqs_per_doc for k in range(seqs_per_doc + 1)]
            lengths.extend(cuts[k + 1] - cuts[k] for k in range(seqs_per_doc))
            document_indices.append(len(lengths))
    itemsize = np.dtype(np_dtype).itemsize
    pointers, at = [], 0
    for n in lengths:
        pointers.append(at)
        at += n * itemsize
    with open(prefix + ".idx", "wb") as idx:
        idx.write(b"MMIDIDX\x00\x00")
        idx.write(struct.pack("<Q", 1))
        idx.write(struct.pack("<B", MEGATRON_CODES[dtype]))
        idx.write(struct.pack("<Q", len(lengths)))
        idx.write(struct.pack("<Q", len(document_indices)))
        idx.write(np.array(lengths, dtype=np.int32).tobytes(order="C"))
        idx.write(np.array(pointers, dtype=np.int64).tobytes(order="C"))
        idx.write(np.array(document_indices, dtype=np.int64).tobytes(order="C"))


def write_llmc(path, toks, model="gpt-2"):
    magic, version, dtype = LLMC[model]
    header = np.zeros(256, dtype=np.int32)
    header[0], header[1], header[2] = magic, version, len(toks)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.array(toks, dtype=dtype).tobytes())


def flag(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def patch(path, offset, fmt, value):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack(fmt, value))


def truncate(path, drop):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - drop)


def corrupt(kind, src, out):
    """Damages OUT (a copy of SRC) the way KIND says; each is one lmrt error."""
    shutil.copytree(src, out)
    idx, mbin = os.path.join(out, "train.idx"), os.path.join(out, "train.bin")
    llmc = sorted(f for f in os.listdir(out) if "train" in f and f.endswith(".bin"))
    llmc = os.path.join(out, llmc[0]) if llmc else None
    if kind == "megatron-truncated-bin":
        truncate(mbin, 2)
    elif kind == "megatron-trailing-bin":
        open(mbin, "ab").write(b"\0\0")
    elif kind == "megatron-truncated-idx":
        truncate(idx, 8)
    elif kind == "megatron-bad-magic":
        patch(idx, 0, "<4s", b"XXID")
    elif kind == "megatron-bad-version":
        patch(idx, 9, "<Q", 2)
    elif kind == "megatron-float-dtype":
        patch(idx, 17, "<B", MEGATRON_CODES["float32"])
    elif kind == "megatron-gap":  # sequence 1 does not start where sequence 0 ends
        patch(idx, 34 + struct.unpack_from("<Q", open(idx, "rb").read(), 18)[0] * 4 + 8, "<q", 4)
    elif kind == "megatron-bad-documents":  # the last document index is not the sequence count
        size = os.path.getsize(idx)
        patch(idx, size - 8, "<q", 1)
    elif kind == "megatron-negative-token":  # int32 datasets: a -1 token
        patch(mbin, 40, "<i", -1)
    elif kind == "llmc-bad-version":
        patch(llmc, 4, "<i", 3)
    elif kind == "llmc-truncated":
        truncate(llmc, 3)
    elif kind == "llmc-trailing":
        open(llmc, "ab").write(b"\0\0")
    elif kind == "llmc-token-300":
        patch(llmc, 1024 + 2 * 5, "<H", 300)
    else:
        sys.exit("unknown corruption " + kind)


def same_losses(a, b):
    rows = [[json.loads(line) for line in open(p)] for p in (a, b)]
    keys = ("step", "loss", "grad_norm", "val_loss")
    pa = [[r.get(k) for k in keys] for r in rows[0]]
    pb = [[r.get(k) for k in keys] for r in rows[1]]
    if pa != pb or not pa:
        sys.exit("metrics differ:\n%s\n%s" % (pa, pb))
    print("same losses over %d steps" % len(pa))


def main(argv):
    cmd = argv[0]
    if cmd == "megatron":
        dtype = flag(argv, "--dtype", "uint16")
        os.makedirs(argv[2], exist_ok=True)
        for split in ("train", "val"):
            tokens, starts = read_lmc_shard(os.path.join(argv[1], split + ".bin"))
            write_megatron(os.path.join(argv[2], split), documents(tokens, starts), dtype,
                           int(flag(argv, "--seqs-per-doc", "1")))
    elif cmd == "llmc":
        name, model = flag(argv, "--name", "corpus"), flag(argv, "--model", "gpt-2")
        parts = int(flag(argv, "--parts", "0"))
        os.makedirs(argv[2], exist_ok=True)
        for split in ("train", "val"):
            tokens, _ = read_lmc_shard(os.path.join(argv[1], split + ".bin"))
            if not parts:
                write_llmc(os.path.join(argv[2], "%s_%s.bin" % (name, split)), tokens, model)
            elif split == "val":
                write_llmc(os.path.join(argv[2], "%s_val_000000.bin" % name), tokens, model)
            else:
                cuts = [len(tokens) * k // parts for k in range(parts + 1)]
                for k in range(parts):
                    write_llmc(os.path.join(argv[2], "%s_train_%06d.bin" % (name, k + 1)),
                               tokens[cuts[k]:cuts[k + 1]], model)
    elif cmd == "corrupt":
        corrupt(argv[1], argv[2], argv[3])
    elif cmd == "same-losses":
        same_losses(argv[1], argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

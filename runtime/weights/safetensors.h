/* Implements: reading and writing safetensors files (the Hugging Face format):
     u64 LE header length N | N bytes of JSON header | tensor data
   The header maps each tensor name to {"dtype": "F32"|"F64"|"I32", "shape": [...],
   "data_offsets": [begin, end]} (offsets relative to the data section), plus an
   optional "__metadata__" object of string values. Used for final weights,
   `lmrt sample --weights` and the PyTorch-parity dumps. The reader trusts nothing:
   header length, JSON, dtypes, shapes and offsets are all checked. */
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/tensor.h"

namespace lmrt {

struct SafetensorsTensor {
  TensorType type;
  std::string_view bytes;  // type.bytes() little-endian bytes, inside SafetensorsFile::storage
  uint64_t offset = 0;      // where those bytes begin in the file
};

/* Tensors are views into `storage` (the file read once, not copied per tensor:
   loading GPT-2's weights must not need twice their size); keep the file alive
   while using them. */
struct SafetensorsFile {
  std::shared_ptr<const std::string> storage;
  std::map<std::string, SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata;
  std::vector<std::string> order;  // tensor names in data-offset order
};

/* Writes `tensors` (in the given order, data 8-byte aligned) atomically.
   Throws Error on a duplicate or empty name, or an I/O failure. With `checksum`,
   stores there the FNV-1a-64 of every byte written (checkpoints record it). */
void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, TensorRef>> &tensors,
                      const std::map<std::string, std::string> &metadata = {},
                      uint64_t *checksum = nullptr);
/* The same, each tensor's bytes asked for when it is written: `fetch(i)` returns tensor
   i's data (tensors[i].second's type is written, its data pointer not read), valid until
   the next call. */
void writeSafetensors(const std::string &path, const std::vector<std::pair<std::string, TensorRef>> &tensors,
                      const std::function<const void *(size_t)> &fetch,
                      const std::map<std::string, std::string> &metadata = {}, uint64_t *checksum = nullptr);
/* The same, each tensor's bytes streamed when it is written: `emit(i, sink)` calls
   `sink(data, bytes)` with tensor i's bytes in order, in pieces of any size adding up to
   its type's bytes. A tensor-parallel rank 0 gathers a split tensor piece by piece there,
   so it never holds a whole one (runtime/train/tensor_parallel.h). */
using ByteSink = std::function<void(const void *, size_t)>;
void writeSafetensorsStreamed(const std::string &path, const std::vector<std::pair<std::string, TensorRef>> &tensors,
                              const std::function<void(size_t, const ByteSink &)> &emit,
                              const std::map<std::string, std::string> &metadata = {},
                              uint64_t *checksum = nullptr);
/* The file's bytes (what writeSafetensors stores). */
std::string encodeSafetensors(const std::vector<std::pair<std::string, TensorRef>> &tensors,
                              const std::map<std::string, std::string> &metadata = {});

/* True when `path` starts like a safetensors file (a header length that fits the
   file, then '{'), without reading the rest: what `lmrt run --out` may replace
   (docs/runtime.md, "Paths"). */
bool looksLikeSafetensors(const std::string &path);

/* Reads and checks a file. Throws Error "safetensors 'x': ...". */
SafetensorsFile readSafetensors(const std::string &path);
SafetensorsFile decodeSafetensors(std::string bytes, const std::string &origin);
/* The header of a file of `fileSize` bytes, from `head`, its first 8 + n bytes (the
   length and the JSON header), checked as decodeSafetensors checks the whole file;
   every tensor's `bytes` is empty and its `offset` says where to read them. */
SafetensorsFile decodeSafetensorsHeader(std::string head, uint64_t fileSize, const std::string &origin);

}  // namespace lmrt

/* Implements: the safetensors writer and the validating reader (see safetensors.h). */
#include "runtime/weights/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "base/file_io.h"
#include "base/hash.h"
#include "base/json.h"

namespace lmrt {
namespace {

// Same cap as the reference implementation: a header is names and shapes only.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

const char *stDtype(DType t) { return t == DType::F32 ? "F32" : t == DType::F64 ? "F64" : "I32"; }

/* The 8-byte length and the JSON header; the data section follows it. */
std::string encodeHeader(const std::vector<std::pair<std::string, TensorRef>> &tensors,
                         const std::map<std::string, std::string> &metadata) {
  std::string header = "{";
  std::set<std::string> names;
  uint64_t offset = 0;
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool f = true;
    for (const auto &[k, v] : metadata) {
      header += (f ? "" : ",") + json::quote(k) + ":" + json::quote(v);
      f = false;
    }
    header += "}";
    first = false;
  }
  for (const auto &[name, t] : tensors) {
    if (name.empty() || name == "__metadata__")
      throw Error("safetensors: invalid tensor name '" + name + "'");
    if (!names.insert(name).second) throw Error("safetensors: tensor '" + name + "' given twice");
    uint64_t n = (uint64_t)t.type.bytes();
    header += std::string(first ? "" : ",") + json::quote(name) + ":{\"dtype\":\"" +
              stDtype(t.type.dtype) + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape().size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape()[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + n) + "]}";
    offset += n;
    first = false;
  }
  header += "}";
  // Pad with spaces so the data section starts 8-byte aligned (as the spec allows).
  while ((8 + header.size()) % 8) header += ' ';
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t)header.size() >> (8 * i) & 0xff));
  return out + header;
}

}  // namespace

std::string encodeSafetensors(const std::vector<std::pair<std::string, TensorRef>> &tensors,
                              const std::map<std::string, std::string> &metadata) {
  std::string out = encodeHeader(tensors, metadata);
  for (const auto &[name, t] : tensors)
    if (t.type.bytes()) out.append(static_cast<const char *>(t.data), (size_t)t.type.bytes());
  return out;
}

void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, TensorRef>> &tensors,
                      const std::map<std::string, std::string> &metadata, uint64_t *checksum) {
  writeSafetensors(path, tensors, [&](size_t i) -> const void * { return tensors[i].second.data; }, metadata,
                   checksum);
}

void writeSafetensors(const std::string &path, const std::vector<std::pair<std::string, TensorRef>> &tensors,
                      const std::function<const void *(size_t)> &fetch,
                      const std::map<std::string, std::string> &metadata, uint64_t *checksum) {
  writeSafetensorsStreamed(
      path, tensors,
      [&](size_t i, const ByteSink &sink) { sink(fetch(i), (size_t)tensors[i].second.type.bytes()); }, metadata,
      checksum);
}

void writeSafetensorsStreamed(const std::string &path, const std::vector<std::pair<std::string, TensorRef>> &tensors,
                              const std::function<void(size_t, const ByteSink &)> &emit,
                              const std::map<std::string, std::string> &metadata, uint64_t *checksum) {
  // Streamed tensor by tensor: saving GPT-2's weights must not need a second copy in memory.
  std::string header = encodeHeader(tensors, metadata);
  writeFileAtomic(path, "safetensors", [&](std::ostream &f) {
    Fnv1a64 sum;
    if (checksum) sum.update(header.data(), header.size());
    f.write(header.data(), (std::streamsize)header.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const size_t bytes = (size_t)tensors[i].second.type.bytes();
      size_t written = 0;
      emit(i, [&](const void *data, size_t n) {
        if (written + n > bytes)
          throw Error("safetensors: internal error: tensor '" + tensors[i].first + "' streamed past its " +
                      std::to_string(bytes) + " bytes");
        if (checksum) sum.update(data, n);
        f.write(static_cast<const char *>(data), (std::streamsize)n);
        written += n;
      });
      if (written != bytes)
        throw Error("safetensors: internal error: tensor '" + tensors[i].first + "' streamed " +
                    std::to_string(written) + " of its " + std::to_string(bytes) + " bytes");
    }
    if (checksum) *checksum = sum.h;
  });
}

namespace {

/* `storage` holds the file's first bytes (all `fileSize` of them, or its header only:
   then the tensors' `bytes` stay empty). */
SafetensorsFile decode(std::shared_ptr<const std::string> storage, uint64_t fileSize, const std::string &origin) {
  const std::string &bytes = *storage;
  const bool whole = bytes.size() == fileSize;
  auto bad = [&](const std::string &msg) -> Error {
    return Error("safetensors '" + origin + "': " + msg);
  };
  if (fileSize < 8 || bytes.size() < 8)
    throw bad("truncated: " + std::to_string(fileSize) + " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t((unsigned char)bytes[i]) << (8 * i);
  if (n > kMaxHeaderBytes || n > fileSize - 8)
    throw bad("header length " + std::to_string(n) + " exceeds the file (" +
              std::to_string(fileSize - 8) + " bytes after the length)" +
              (n > kMaxHeaderBytes ? " or the 100 MiB limit" : ""));
  if (bytes.size() < 8 + n) throw bad("internal error: the header was not read whole");
  std::string header = bytes.substr(8, n);
  if (header.empty() || header[0] != '{') throw bad("header does not start with '{' (not a safetensors file?)");
  json::Value root;
  try {
    root = json::parse(header);
  } catch (const Error &e) {
    throw bad(std::string("header: ") + e.what());
  }
  if (root.kind != json::Value::Object) throw bad("header is not a JSON object");

  SafetensorsFile file;
  file.storage = storage;
  const uint64_t dataSize = fileSize - 8 - n;
  struct Span { uint64_t begin, end; std::string name; };
  std::vector<Span> spans;
  for (const auto &[name, v] : root.members) {
    if (name == "__metadata__") {
      if (v.kind != json::Value::Object) throw bad("__metadata__ is not an object");
      for (const auto &[k, mv] : v.members) {
        if (mv.kind != json::Value::String)
          throw bad("__metadata__ value '" + k + "' is a " + json::kindName(mv.kind) + ", not a string");
        file.metadata[k] = mv.text;
      }
      continue;
    }
    std::string where = "tensor '" + name + "': ";
    if (v.kind != json::Value::Object) throw bad(where + "entry is not an object");
    const json::Value *dt = v.find("dtype"), *shape = v.find("shape"), *offs = v.find("data_offsets");
    if (!dt || !shape || !offs) throw bad(where + "needs dtype, shape and data_offsets");
    if (dt->kind != json::Value::String) throw bad(where + "dtype is not a string");
    SafetensorsTensor t;
    if (dt->text == "F32") t.type.dtype = DType::F32;
    else if (dt->text == "F64") t.type.dtype = DType::F64;
    else if (dt->text == "I32") t.type.dtype = DType::I32;
    else throw bad(where + "unsupported dtype '" + dt->text + "' (lmrt reads F32, F64 and I32)");
    if (shape->kind != json::Value::Array) throw bad(where + "shape is not an array");
    // At most 2^59 elements (2^62 bytes at 8 an element), zero dimensions left out of
    // the product: every size below is then exact in int64, and so is numel(), which
    // multiplies in order ([2^40, 2^40, 0] would overflow before it reached the 0).
    constexpr int64_t kMaxElements = int64_t(1) << 59;
    int64_t nonzero = 1, elems = 1;
    for (const json::Value &d : shape->items) {
      int64_t x;
      if (!d.asInt(x) || x < 0) throw bad(where + "shape entries must be non-negative integers");
      if (x > 0 && nonzero > kMaxElements / x) throw bad(where + "shape has more than 2^59 elements");
      if (x > 0) nonzero *= x;
      elems *= x;
      t.type.shape.push_back(x);
    }
    if (offs->kind != json::Value::Array || offs->items.size() != 2)
      throw bad(where + "data_offsets must be [begin, end]");
    int64_t b, e;
    if (!offs->items[0].asInt(b) || !offs->items[1].asInt(e) || b < 0 || e < b)
      throw bad(where + "data_offsets must be integers with 0 <= begin <= end");
    if ((uint64_t)e > dataSize)
      throw bad(where + "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                ") run past the data section of " + std::to_string(dataSize) + " bytes");
    const int64_t size = elems * (int64_t)dtypeSize(t.type.dtype);
    if (size != e - b)
      throw bad(where + t.type.str() + " needs " + std::to_string(size) + " bytes, data_offsets span " +
                std::to_string(e - b));
    t.offset = 8 + n + (uint64_t)b;
    if (whole) t.bytes = std::string_view(bytes).substr(8 + n + (size_t)b, (size_t)(e - b));
    spans.push_back({(uint64_t)b, (uint64_t)e, name});
    file.tensors.emplace(name, std::move(t));
  }
  // Like the reference reader: tensors tile the data section exactly, with no
  // overlap and no hole (a hole means bytes nobody accounts for).
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (const Span &s : spans) {
    if (s.begin < at)
      throw bad("tensor '" + s.name + "' overlaps the previous tensor (data_offsets start at " +
                std::to_string(s.begin) + ", previous ends at " + std::to_string(at) + ")");
    if (s.begin > at)
      throw bad("gap of " + std::to_string(s.begin - at) + " bytes before tensor '" + s.name + "'");
    at = s.end;
    file.order.push_back(s.name);
  }
  if (at != dataSize)
    throw bad(std::to_string(dataSize - at) + " bytes of data after the last tensor");
  return file;
}

}  // namespace

SafetensorsFile decodeSafetensors(std::string bytesIn, const std::string &origin) {
  const uint64_t size = bytesIn.size();
  return decode(std::make_shared<const std::string>(std::move(bytesIn)), size, origin);
}

SafetensorsFile decodeSafetensorsHeader(std::string head, uint64_t fileSize, const std::string &origin) {
  return decode(std::make_shared<const std::string>(std::move(head)), fileSize, origin);
}

bool looksLikeSafetensors(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char head[9];
  if (!f.read(reinterpret_cast<char *>(head), sizeof head)) return false;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | head[i];
  f.seekg(0, std::ios::end);
  const uint64_t size = (uint64_t)f.tellg();
  return n >= 2 && n <= size - 8 && head[8] == '{';
}

SafetensorsFile readSafetensors(const std::string &path) {
  return decodeSafetensors(readWholeFile(path, "safetensors"), path);
}

}  // namespace lmrt

/* Implements: plan framing (magic, version, length, FNV-1a checksum) and the
   plan file reader/writer. See plan_file.h for the layout. */
#include "contract/plan_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "base/file_io.h"
#include "base/hash.h"
#include "base/tensor.h"

namespace lmrt {
namespace {

// --- little-endian helpers (the format is LE on every host) -----------------

template <typename T> void putLE(std::string &out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(char((uint64_t)v >> (8 * i) & 0xff));
}
template <typename T> T getLE(const std::string &in, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t((unsigned char)in[at + i]) << (8 * i);
  return T(v);
}

[[noreturn]] void planError(const std::string &origin, const std::string &msg) {
  throw Error("plan '" + origin + "': " + msg);
}

}  // namespace

std::string serializePlan(const plan::Plan &plan) {
  // Deterministic: map fields (step attributes, config) in key order, so the same
  // plan always gives the same bytes and the same checksum.
  std::string payload;
  {
    google::protobuf::io::StringOutputStream sos(&payload);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    if (!plan.SerializeToCodedStream(&cos)) throw Error("cannot serialize the plan protobuf");
  }
  return payload;
}

std::string encodePlan(const plan::Plan &plan) {
  std::string payload = serializePlan(plan);
  std::string out(kPlanMagic, sizeof(kPlanMagic));
  putLE<uint32_t>(out, kPlanFormatVersion);
  putLE<uint64_t>(out, payload.size());
  out += payload;
  putLE<uint64_t>(out, fnv1a64(payload.data(), payload.size()));
  return out;
}

plan::Plan decodePlan(const std::string &bytes, const std::string &origin) {
  if (bytes.empty()) planError(origin, "file is empty (not an LMC plan)");
  if (bytes.size() < sizeof(kPlanMagic) &&
      std::memcmp(bytes.data(), kPlanMagic, bytes.size()) == 0)
    planError(origin, "truncated: " + std::to_string(bytes.size()) +
                          " bytes, shorter than the 20-byte header");
  if (bytes.size() < sizeof(kPlanMagic) ||
      std::memcmp(bytes.data(), kPlanMagic, sizeof(kPlanMagic)) != 0)
    planError(origin, "is not an LMC plan (missing the \"LMCPLAN\" magic at the start)");
  if (bytes.size() < kPlanHeaderBytes)
    planError(origin, "truncated: the header needs " + std::to_string(kPlanHeaderBytes) +
                          " bytes, file has " + std::to_string(bytes.size()));
  uint32_t version = getLE<uint32_t>(bytes, 8);
  if (version < kOldestPlanFormatVersion || version > kPlanFormatVersion)
    planError(origin, "unsupported plan format version " + std::to_string(version) +
                          " (this lmrt reads versions " + std::to_string(kOldestPlanFormatVersion) + " to " +
                          std::to_string(kPlanFormatVersion) +
                          "; recompile the model with a matching lmc)");
  uint64_t declared = getLE<uint64_t>(bytes, 12);
  uint64_t available = bytes.size() - kPlanHeaderBytes;
  if (available < kPlanTrailerBytes || declared > available - kPlanTrailerBytes)
    planError(origin, "truncated: header says " + std::to_string(declared) +
                          " payload bytes (+8 checksum), file has " + std::to_string(available) +
                          " bytes after the header");
  if (declared < available - kPlanTrailerBytes)
    planError(origin, std::to_string(available - kPlanTrailerBytes - declared) +
                          " trailing bytes after the checksum (header says " +
                          std::to_string(declared) + " payload bytes)");
  const char *payload = bytes.data() + kPlanHeaderBytes;
  uint64_t stored = getLE<uint64_t>(bytes, kPlanHeaderBytes + declared);
  uint64_t actual = fnv1a64(payload, declared);
  if (stored != actual) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "stored %016llx, computed %016llx",
                  (unsigned long long)stored, (unsigned long long)actual);
    planError(origin, std::string("corrupted: payload checksum mismatch (") + buf + ")");
  }
  plan::Plan plan;
  if (declared > (uint64_t)INT32_MAX)
    planError(origin, "payload of " + std::to_string(declared) + " bytes exceeds protobuf's 2 GiB limit");
  // Our message says what failed; protobuf's own stderr log would only repeat it.
  google::protobuf::LogSilencer quiet;
  if (!plan.ParseFromArray(payload, (int)declared))
    planError(origin, "payload is not a valid lmrt.plan.Plan protobuf (checksum ok: written by an "
                      "incompatible lmc?)");
  return plan;
}

void writePlanFile(const std::string &path, const plan::Plan &plan) {
  std::string bytes = encodePlan(plan);
  writeFileAtomic(path, "plan", [&](std::ostream &f) {
    f.write(bytes.data(), (std::streamsize)bytes.size());
  });
}

bool writePlanFile(const std::string &path, const plan::Plan &plan, std::string &error) noexcept {
  try {
    writePlanFile(path, plan);
    return true;
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}

plan::Plan readPlanFile(const std::string &path) {
  return decodePlan(readWholeFile(path, "plan"), path);
}

}  // namespace lmrt

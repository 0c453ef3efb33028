/* Implements: the on-disk framing of a plan, written by `lmc` and read by `lmrt`.
     "LMCPLAN\0" (8 bytes) | u32 version | u64 payload length | payload | u64 FNV-1a-64(payload)
   All integers little-endian; the payload is the serialized lmrt.plan.Plan
   protobuf. The reader checks every field before parsing a byte of the payload,
   so a truncated, corrupted or foreign file is reported as such. Semantic checks
   of the parsed plan live in validate.h. Links only protobuf (lmc uses it too). */
#pragma once
#include <cstdint>
#include <string>

#include "contract/plan.pb.h"
#include "base/tensor.h"  // lmrt::Error (header-only use)

namespace lmrt {

constexpr char kPlanMagic[8] = {'L', 'M', 'C', 'P', 'L', 'A', 'N', '\0'};
/* Bump when plan.proto changes in a way old readers cannot handle (3 added STATE
   buffers and the prefill/decode programs). Plans from kOldestPlanFormatVersion on
   are read too: a version-2 plan is a version-3 plan without them. */
constexpr uint32_t kPlanFormatVersion = 3;
constexpr uint32_t kOldestPlanFormatVersion = 2;
/* magic + version + payload length, and the trailing checksum. */
constexpr size_t kPlanHeaderBytes = 8 + 4 + 8;
constexpr size_t kPlanTrailerBytes = 8;

/* The payload: `plan` serialized deterministically (map entries in key order). */
std::string serializePlan(const plan::Plan &plan);
/* The framed bytes of `plan` (what writePlanFile stores). */
std::string encodePlan(const plan::Plan &plan);
/* Parses framed bytes; `origin` names the source in errors. Throws lmrt::Error. */
plan::Plan decodePlan(const std::string &bytes, const std::string &origin);

/* Writes atomically (temp file + rename). Throws lmrt::Error. */
void writePlanFile(const std::string &path, const plan::Plan &plan);
/* The same without exceptions, for callers built with -fno-exceptions:
   returns false and sets `error`. */
bool writePlanFile(const std::string &path, const plan::Plan &plan, std::string &error) noexcept;
/* Reads and checks framing, version, length and checksum, then parses.
   Throws lmrt::Error ("plan 'x.plan': ..."). */
plan::Plan readPlanFile(const std::string &path);

}  // namespace lmrt

/* Fuzz target: loading a plan file, as lmrt does before anything runs: the framing
   (contract/plan_file.h: magic, version, length, checksum), the protobuf payload,
   then validation and binding (runtime/exec/bound_plan.h: the plan contract plus
   the CPU kernel table's check of every step, which this target links, as lmrt
   does, through the CPU backend) and the memory prediction lmrt prints.

   Each input is tried as given, then with its length and checksum fields made
   to match its payload, so that mutations of the payload reach the protobuf
   parser and the contract instead of stopping at the checksum. Nothing is run:
   a plan's generated kernels are native code, loaded only after validation. */
#include <google/protobuf/stubs/logging.h>

#include "base/hash.h"
#include "contract/contract.h"
#include "contract/plan_file.h"
#include "runtime/exec/bound_plan.h"
#include "test/Fuzz/FuzzSupport.h"
#include "test/Unit/runtime/TinyPlan.h"

using namespace lmrt;

namespace {

void load(const std::string &bytes) {
  plan::Plan p;
  try {
    p = decodePlan(bytes, "fuzz.plan");
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
    return;
  }
  try {
    BoundPlan bound(std::move(p), "fuzz.plan");
    PredictedMemory m = predictedMemory(bound.plan());
    LMC_FUZZ_CHECK(m.params >= 0 && m.inputs >= 0 && m.arena >= 0 && m.matmulScratch >= 0, "");
    LMC_FUZZ_CHECK(bound.arenaBytes() >= 0 && bound.arenaBytes() <= kMaxArenaBytes, "");
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  lmc_fuzz::emitSeed("tiny-f64.plan", encodePlan(test::tinyPlan(plan::F64)));
  lmc_fuzz::emitSeed("tiny-f32.plan", encodePlan(test::tinyPlan(plan::F32)));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes = lmc_fuzz::bytesOf(data, size);
  load(bytes);
  if (size >= kPlanHeaderBytes + kPlanTrailerBytes && std::memcmp(data, kPlanMagic, sizeof kPlanMagic) == 0) {
    const uint64_t payload = size - kPlanHeaderBytes - kPlanTrailerBytes;
    std::string fixed = bytes;
    lmc_fuzz::storeLE<uint64_t>(fixed, 12, payload);
    lmc_fuzz::storeLE<uint64_t>(fixed, kPlanHeaderBytes + payload,
                                fnv1a64(fixed.data() + kPlanHeaderBytes, payload));
    if (fixed != bytes) load(fixed);
  }
  return 0;
}

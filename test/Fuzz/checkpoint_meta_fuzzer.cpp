/* Fuzz target: a checkpoint's meta.json, read by readCheckpoint
   (runtime/train/checkpoint.h) as `lmrt run --resume` reads it, against a session
   of the runtime tests' tiny plan: JSON, format and version, its own checksum,
   the plan identity, the step, schedule, optimizer, RNG, data and metrics fields,
   and the state file's size and checksum; an accepted checkpoint is restored
   into the session.

   The checkpoint directory is made once by writeCheckpoint for that session (its
   state.safetensors stays; its meta.json is the seed this target writes); each
   input replaces meta.json. The file ends with its own FNV-1a-64
   ("meta_fnv1a64": "<16 hex digits>" over the text before the key), which the
   target rewrites to match, so that mutations reach the fields after the check. */
#include <cinttypes>

#include "base/hash.h"
#include "runtime/exec/session.h"
#include "runtime/train/checkpoint.h"
#include "test/Fuzz/FuzzSupport.h"
#include "test/Unit/runtime/TinyPlan.h"

using namespace lmrt;

namespace {

struct State {
  std::unique_ptr<Session> session;
  std::string dir;  // the checkpoint directory
};

State &state() {
  static State s;
  return s;
}

/* The input with its meta_fnv1a64 value set to the checksum of what precedes the
   key, where the key is followed by `: "` and 16 characters and a closing quote. */
std::string withChecksum(std::string text) {
  const std::string key = "\"meta_fnv1a64\"";
  size_t at = text.rfind(key);
  if (at == std::string::npos) return text;
  size_t q = text.find('"', at + key.size());
  if (q == std::string::npos || q + 17 >= text.size() || text[q + 17] != '"') return text;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, fnv1a64(std::string_view(text).substr(0, at)));
  text.replace(q + 1, 16, hex);
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  State &s = state();
  s.session = Session::fromPlan(test::tinyPlan(plan::F32), "tiny.plan");
  s.session->initParams(1);
  CheckpointMeta meta;
  meta.step = 3;
  meta.totalSteps = 10;
  meta.schedule.kind = "cosine";
  meta.schedule.lr = 1e-3;
  meta.schedule.minLr = 1e-4;
  meta.schedule.warmupSteps = 2;
  meta.schedule.decaySteps = 10;
  meta.adamwUpdates = 3;
  meta.trainTokens = 1000;
  meta.valTokens = 100;
  meta.trainFingerprint = 0x0123456789abcdefull;
  meta.valFingerprint = 0xfedcba9876543210ull;
  meta.metricsPath = "metrics.jsonl";
  meta.metricsBytes = 321;
  s.dir = writeCheckpoint(lmc_fuzz::scratchDir("checkpoint_meta"), *s.session, meta);
  lmc_fuzz::emitSeed("tiny-meta.json", lmc_fuzz::readFile(s.dir + "/meta.json"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  State &s = state();
  lmc_fuzz::writeFile(s.dir + "/meta.json", withChecksum(lmc_fuzz::bytesOf(data, size)));
  try {
    Checkpoint c = readCheckpoint(s.dir, *s.session);
    LMC_FUZZ_CHECK(c.meta.step >= 1 && c.meta.totalSteps >= 1 && c.meta.accumulate >= 1, "");
    restoreCheckpoint(c, *s.session);
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
  }
  return 0;
}

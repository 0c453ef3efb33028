/* Fuzz target: safetensors files (runtime/weights/safetensors.h), as every
   weights reader takes them (--init, --weights, lmrt weights, checkpoints' state):
   the decoder on the bytes, then loadWeights (runtime/weights/weights.h) of the
   same file into a session of the runtime tests' tiny plan, which checks names,
   shapes and values against the plan's parameters.

   Invariants of an accepted file: each tensor's bytes lie inside the file and
   are exactly its type's size; the tensors are listed in data order; and the
   writer, given them back, produces a file that decodes to the same tensors and
   metadata (what `lmrt weights import` relies on to re-export byte for byte). */
#include "runtime/exec/session.h"
#include "runtime/weights/safetensors.h"
#include "runtime/weights/weights.h"
#include "test/Fuzz/FuzzSupport.h"
#include "test/Unit/runtime/TinyPlan.h"

using namespace lmrt;

namespace {

std::unique_ptr<Session> &session() {
  static std::unique_ptr<Session> s;
  return s;
}

void checkDecoded(const SafetensorsFile &f) {
  const std::string &all = *f.storage;
  LMC_FUZZ_CHECK(f.order.size() == f.tensors.size(), "");
  std::vector<std::pair<std::string, TensorRef>> refs;
  for (const std::string &name : f.order) {
    auto it = f.tensors.find(name);
    LMC_FUZZ_CHECK(it != f.tensors.end(), name);
    const SafetensorsTensor &t = it->second;
    LMC_FUZZ_CHECK(t.bytes.data() >= all.data() && t.bytes.data() + t.bytes.size() <= all.data() + all.size(),
                   name);
    LMC_FUZZ_CHECK((int64_t)t.bytes.size() == t.type.bytes(), name + " " + t.type.str());
    refs.push_back({name, TensorRef{const_cast<char *>(t.bytes.data()), t.type}});
  }
  std::string again;
  try {
    again = encodeSafetensors(refs, f.metadata);
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
    return;  // a name the writer refuses to write ("")
  }
  SafetensorsFile g = decodeSafetensors(again, "fuzz re-encoded");
  LMC_FUZZ_CHECK(g.order == f.order && g.metadata == f.metadata, "");
  for (const std::string &name : f.order) {
    const SafetensorsTensor &a = f.tensors.at(name), &b = g.tensors.at(name);
    LMC_FUZZ_CHECK(a.type.str() == b.type.str() && a.bytes == b.bytes, name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  session() = Session::fromPlan(test::tinyPlan(plan::F64), "tiny.plan");
  session()->initParams(1);
  const std::string path = lmc_fuzz::scratchDir("safetensors") + "/seed.safetensors";
  saveWeights(*session(), path, {{"format", "pt"}});
  lmc_fuzz::emitSeed("tiny-f64.safetensors", lmc_fuzz::readFile(path));
  auto f32 = Session::fromPlan(test::tinyPlan(plan::F32), "tiny.plan");
  f32->initParams(2);
  saveWeights(*f32, path);
  lmc_fuzz::emitSeed("tiny-f32.safetensors", lmc_fuzz::readFile(path));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes = lmc_fuzz::bytesOf(data, size);
  try {
    checkDecoded(decodeSafetensors(bytes, "fuzz.safetensors"));
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
  }
  const std::string path = lmc_fuzz::scratchDir("safetensors") + "/w.safetensors";
  lmc_fuzz::writeFile(path, bytes);
  try {
    loadWeights(*session(), path);
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
  }
  return 0;
}

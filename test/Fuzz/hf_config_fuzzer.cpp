/* Fuzz target: a Hugging Face config.json, read by `lmrt weights import --format hf`
   (importHf, runtime/weights/hf_weights.h), which checks it against the plan's
   name map before reading the weights.

   The plan is the runtime tests' tiny plan with an `hf` name map added (a
   config of every value kind, a transposed entry and a tied name). Once, the
   target exports the plan's initial weights through it (exportHf), which gives
   the model.safetensors every import reads and the config.json it writes as its
   seed; each input then replaces config.json and is imported, into a file in the
   scratch directory. */
#include "runtime/exec/session.h"
#include "runtime/weights/hf_weights.h"
#include "runtime/weights/weights.h"
#include "test/Fuzz/FuzzSupport.h"
#include "test/Unit/runtime/TinyPlan.h"

using namespace lmrt;

namespace {

struct State {
  plan::Plan plan;
  std::string dir, hfDir;
};

State &state() {
  static State s;
  return s;
}

plan::Plan planWithHfMap() {
  test::TinyDims d;
  plan::Plan p = test::tinyPlan(plan::F32, d);
  plan::WeightExport *w = p.add_weight_exports();
  w->set_format("hf");
  w->set_architecture("TinyBigramLMHeadModel");
  w->set_source_loc("tiny.lm:20:1");
  auto &config = *w->mutable_config();
  config["vocab_size"].set_i(d.V);
  config["n_embd"].set_i(d.D);
  config["layer_norm_epsilon"].set_f(1e-5);
  config["tie_word_embeddings"].set_b(false);
  config["activation_function"].set_s("gelu_new");
  config["model_type"].set_s("tiny-bigram");
  plan::WeightMapEntry *wte = w->add_entries();
  wte->set_param("wte");
  wte->add_names("transformer.wte.weight");
  plan::WeightMapEntry *head = w->add_entries();
  head->set_param("w");
  head->add_names("lm_head.weight");
  head->set_transpose(true);
  head->add_tied("lm_head.alias");
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  State &s = state();
  s.plan = planWithHfMap();
  s.dir = lmc_fuzz::scratchDir("hf_config");
  s.hfDir = s.dir + "/hf";
  auto session = Session::fromPlan(s.plan, "tiny.plan");
  session->initParams(1);
  saveWeights(*session, s.dir + "/plan.safetensors");
  HfExportOptions o;
  o.planPath = s.dir + "/tiny.plan";
  o.weightsPath = s.dir + "/plan.safetensors";
  o.outDir = s.hfDir;
  exportHf(s.plan, o);
  lmc_fuzz::emitSeed("tiny-config.json", lmc_fuzz::readFile(s.hfDir + "/config.json"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  State &s = state();
  lmc_fuzz::writeFile(s.hfDir + "/config.json", std::string_view(reinterpret_cast<const char *>(data), size));
  HfImportOptions o;
  o.planPath = s.dir + "/tiny.plan";
  o.dir = s.hfDir;
  o.outPath = s.dir + "/imported.safetensors";
  o.overwrite = true;
  try {
    importHf(s.plan, o);
  } catch (const Error &e) {
    lmc_fuzz::rejected(e);
  }
  return 0;
}

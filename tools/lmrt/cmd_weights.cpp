/* Implements: `lmrt weights export|import --format hf`: weights to and from a
   Hugging Face transformers directory (config.json + model.safetensors) through
   the name map the model file's `export hf` section puts in the plan
   (runtime/weights/hf_weights.h, docs/runtime.md "Hugging Face weights"). */
#include <cstdio>
#include <memory>

#include "base/paths.h"
#include "runtime/weights/hf_weights.h"
#include "runtime/weights/lora_merge.h"
#include "runtime/weights/safetensors.h"
#include "contract/plan_file.h"
#include "runtime/exec/validate.h"
#include "tools/lmrt/commands.h"

namespace lmrt {
namespace {

struct Options {
  std::string format, plan, weights, dir, out, section, base;
  bool overwrite = false;
};

/* The files of a Hugging Face directory (save_pretrained's names). */
constexpr const char *kHfModelFile = "model.safetensors";
constexpr const char *kHfConfigFile = "config.json";

std::string joinPath(const std::string &dir, const char *name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

/* The formats lmrt converts to; the plan says how, per format. */
void checkFormat(const std::string &format) {
  if (format != "hf") fail("unknown --format '%s' (lmrt knows hf: Hugging Face transformers)", format.c_str());
}

plan::Plan loadPlan(const std::string &path) {
  plan::Plan p = readPlanFile(path);
  validatePlan(p, path);
  return p;
}

void exportCmd(const Options &o) {
  checkFormat(o.format);
  // The output rules (base/paths.h) before any work: the directory's files need
  // --overwrite when they exist, and may not be the plan or the weights.
  checkOutputs({{"--out", o.out, true},
                {"--out", joinPath(o.out, kHfModelFile), false, IfExists::NeedsOverwrite},
                {"--out", joinPath(o.out, kHfConfigFile), false, IfExists::NeedsOverwrite}},
               {{"the plan", o.plan}, {"the weights", o.weights}}, o.overwrite, stdout);
  plan::Plan p = loadPlan(o.plan);
  exportHf(p, {o.plan, o.weights, o.out, o.overwrite, o.section});
  const plan::WeightExport &w = weightExport(p, "hf", o.plan, o.section);
  std::string omitted = w.omitted_size() ? ", " + std::to_string(w.omitted_size()) + " omitted" : "";
  std::printf("wrote %s: %s, %d parameters%s (config.json, model.safetensors)\n", o.out.c_str(),
              w.architecture().c_str(), w.entries_size(), omitted.c_str());
}

void importCmd(const Options &o) {
  checkFormat(o.format);
  checkOutputs({{"--out", o.out, false, IfExists::NeedsOverwrite}},
               {{"the plan", o.plan},
                {"the model", joinPath(o.dir, kHfModelFile)},
                {"the config", joinPath(o.dir, kHfConfigFile)},
                {"--base", o.base}},
               o.overwrite, stdout);
  plan::Plan p = loadPlan(o.plan);
  importHf(p, {o.plan, o.dir, o.out, o.overwrite, o.section, o.base});
  std::printf("wrote %s: %d parameters of plan %s from %s\n", o.out.c_str(), p.params_size(), o.plan.c_str(),
              o.dir.c_str());
}

/* `lmrt weights merge`: a LoRA plan's weights with the adapters folded in, the file
   the same model without `lora` loads (--init, --weights, export). */
void mergeCmd(const Options &o) {
  checkOutputs({{"--out", o.out, false, IfExists::NeedsOverwrite}}, {{"the plan", o.plan}, {"the weights", o.weights}},
               o.overwrite, stdout);
  plan::Plan p = loadPlan(o.plan);
  const plan::Lora &l = p.train().lora();
  if (l.targets_size() == 0)
    fail("plan '%s' has no LoRA adapters (its train block has no lora = { ... }): nothing to merge", o.plan.c_str());
  SafetensorsFile file = readSafetensors(o.weights);
  std::map<std::string, std::string> storage;
  mergeLoraAdapters(p, file, o.weights, storage);
  std::vector<std::pair<std::string, TensorRef>> tensors;
  for (const plan::Param &param : p.params()) {
    auto it = file.tensors.find(param.name());
    if (it == file.tensors.end()) continue;  // an adapter
    // writeSafetensors only reads through the pointer.
    tensors.emplace_back(param.name(), TensorRef{const_cast<char *>(it->second.bytes.data()), it->second.type});
  }
  writeSafetensors(o.out, tensors);
  std::printf("wrote %s: %zu parameters, %d LoRA weights merged (W + %g A B; the model without lora loads it)\n",
              o.out.c_str(), tensors.size(), l.targets_size(), l.alpha() / (double)l.rank());
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand(
      "weights", "Convert weights to and from other frameworks (Hugging Face); merge LoRA adapters");
  cmd->require_subcommand(1);
  auto e = std::make_shared<Options>();
  auto *ex = cmd->add_subcommand("export", "Write a Hugging Face directory (config.json, model.safetensors) "
                                           "that from_pretrained loads");
  ex->add_option("--format", e->format, "Target format: hf (Hugging Face transformers)")->required();
  ex->add_option("plan", e->plan, "Plan whose model file has an `export hf` section")->required();
  ex->add_option("weights", e->weights, "Weights (safetensors with plan names, or a checkpoint's state)")
      ->required();
  ex->add_option("--out", e->out, "Directory to write (created if missing)")->required();
  ex->add_flag("--overwrite", e->overwrite, "Replace config.json and model.safetensors already in --out");
  ex->add_option("--section", e->section, "Which map (model class) of a plan with several `export hf` sections");
  ex->callback([e] { exportCmd(*e); });

  auto i = std::make_shared<Options>();
  auto *im = cmd->add_subcommand("import", "Read a Hugging Face directory (save_pretrained's) into plan weights");
  im->add_option("--format", i->format, "Source format: hf (Hugging Face transformers)")->required();
  im->add_option("dir", i->dir, "Directory with config.json and model.safetensors")->required();
  im->add_option("--plan", i->plan, "Plan of the same model (its `export hf` map)")->required();
  im->add_option("--out", i->out, "Weights file to write (safetensors, plan names)")->required();
  im->add_flag("--overwrite", i->overwrite, "Replace --out if it exists");
  im->add_option("--section", i->section, "Which map (model class) of a plan with several `export hf` sections");
  im->add_option("--base", i->base, "Plan weights for the parameters the map leaves out (omitted ones, or another "
                                    "section's)");
  im->callback([i] { importCmd(*i); });

  auto m = std::make_shared<Options>();
  auto *me = cmd->add_subcommand("merge", "Fold a LoRA plan's adapters into its weights (W + alpha/rank A B), "
                                          "leaving the adapters out");
  me->add_option("plan", m->plan, "Plan compiled with lora = { ... }")->required();
  me->add_option("weights", m->weights, "Its weights (safetensors with plan names, or a checkpoint's state)")
      ->required();
  me->add_option("--out", m->out, "Weights file to write (safetensors, the base model's names)")->required();
  me->add_flag("--overwrite", m->overwrite, "Replace --out if it exists");
  me->callback([m] { mergeCmd(*m); });
}

RegisterCommand reg("weights", add);

}  // namespace
}  // namespace lmrt

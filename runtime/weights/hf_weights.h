/* Implements: moving weights between lmrt (plan names, safetensors) and Hugging
   Face transformers (a from_pretrained directory: config.json + model.safetensors)
   through the plan's name map, which the model file's `export hf` section states
   (docs/language.md; plan.proto WeightExport). No Session is built: the plan's
   parameter list and the map are all that is needed, so a plan whose kernels do
   not load here (CUDA only) still converts.

   Export writes the tensors in the order and form of safetensors' own writer
   (dtype descending, then name; __metadata__ {"format": "pt"}), so importing an
   HF file and exporting it again gives the same bytes. */
#pragma once
#include <string>

#include "contract/plan.pb.h"

namespace lmrt {

/* The plan's map for `format`: its only one, or with several (one per model
   class) the one whose architecture is `section`. Throws Error naming the plan
   (and what to add to the model file) when it has none, and listing the classes
   when `section` is empty or names none of several. */
const plan::WeightExport &weightExport(const plan::Plan &plan, const std::string &format,
                                       const std::string &planPath, const std::string &section = "");

struct HfExportOptions {
  std::string planPath, weightsPath, outDir;
  bool overwrite = false;
  std::string section;  // the map's model class, with several (weightExport)
};
/* Writes outDir/model.safetensors and outDir/config.json. The weights must hold
   exactly the plan's parameters (a checkpoint's state.safetensors too: its
   "adamw.*" moments are skipped), with their shapes and finite values; the file
   holds those the map (`section`'s) names: not its omitted parameters. */
void exportHf(const plan::Plan &plan, const HfExportOptions &o);

struct HfImportOptions {
  std::string planPath, dir, outPath;
  bool overwrite = false;
  std::string section;  // the map's model class, with several (weightExport)
  /* Plan weights for the parameters `section`'s map leaves out (required when
     it maps only some of them: ELECTRA's generator class lacks the
     discriminator, BertForMaskedLM SpanBERT's omitted span boundary head). */
  std::string basePath;
};
/* Reads dir/model.safetensors (and checks dir/config.json against the map's
   config), writes outPath with the plan's parameter names, as `lmrt run --out`
   does; parameters the map leaves out come from basePath. Missing, misshapen, extra or non-finite tensors are errors naming them. */
void importHf(const plan::Plan &plan, const HfImportOptions &o);

/* A JSON number for `v` that reads back as exactly `v`, with a ".0" when it would
   otherwise read as an integer (Python's json keeps the float type). */
std::string jsonDouble(double v);

}  // namespace lmrt

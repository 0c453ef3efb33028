/* Implements: folding a LoRA plan's adapters into its weights (docs/finetuning.md,
   "LoRA"): W + (alpha / rank) A B for each target, the form for inference and for
   `lmrt weights export` (PEFT's merge_and_unload). */
#pragma once
#include <map>
#include <string>

#include "contract/plan.pb.h"
#include "runtime/weights/safetensors.h"

namespace lmrt {

/* Checks that `file` (read from `path`; a checkpoint's state is accepted, its optimizer
   state skipped) holds every parameter of `plan` with its shape, then replaces each
   LoRA target's tensor by the merged weight (its bytes kept in `storage`) and removes
   the adapters and the optimizer state from `file`. A plan without LoRA: nothing changes
   but the check. Returns the number of targets merged. */
int mergeLoraAdapters(const plan::Plan &plan, SafetensorsFile &file, const std::string &path,
                      std::map<std::string, std::string> &storage);

}  // namespace lmrt

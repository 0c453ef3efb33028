/* Implements: the runtime's validation of a parsed plan before anything runs: the
   plan contract (contract/contract.h: buffers in range and in the arena,
   PARAM/GRAD/INPUT buffers naming declarations of the same type, steps naming
   ops of the generated op table with their attributes, values written before
   they are read, the program conventions, the train and data configs) plus,
   for every step, the registered kernel check of its types and attribute values
   (backend_registry.h: the CPU kernel table's). A plan is trusted input only
   after this passes. See docs/plan-format.md. */
#pragma once
#include <string>

#include "contract/plan.pb.h"

namespace lmrt {

/* Throws lmrt::Error on the first problem, naming where it is:
   "plan 'x.plan': program 'train_step', step 17 (matmul, from gpt_tiny.lm:12:5): ..."
   Also when no kernel check is registered (no CPU backend linked in). */
void validatePlan(const plan::Plan &plan, const std::string &origin);

}  // namespace lmrt

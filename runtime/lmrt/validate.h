/* Implements: semantic validation of a parsed plan before anything runs. A plan
   is trusted input only after this passes: every buffer id is in range, every
   ARENA buffer fits the arena, every PARAM/GRAD/INPUT names something declared
   with the same type, every step has a kernel whose check() accepts its types and
   attributes, every value is written before it is read (and not clobbered by an
   aliasing arena buffer in between), and the programs follow the conventions the
   runtime relies on ("train_step": "loss" + "grad:<p>" for every parameter;
   "eval": "loss"; optional "forward": "logits"). See docs/plan-format.md. */
#pragma once
#include <string>

#include "plan.pb.h"

namespace lmrt {

/* Throws lmrt::Error on the first problem, naming where it is:
   "plan 'x.plan': program 'train_step', step 17 (matmul, from gpt_tiny.lm:12:5): ..." */
void validatePlan(const plan::Plan &plan, const std::string &origin);

/* Byte alignment of every ARENA buffer offset (and of the arena itself). */
constexpr int64_t kArenaAlignment = 64;
/* Largest arena a plan may ask for (1 PiB): far beyond any machine, small enough
   that offset and size arithmetic on it cannot overflow. */
constexpr int64_t kMaxArenaBytes = int64_t(1) << 50;

}  // namespace lmrt

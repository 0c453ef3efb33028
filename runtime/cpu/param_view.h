/* Implements: the optimizer's view of one parameter: its value and gradient
   storage (f32 or f64, the same for both) and whether weight decay applies.
   Kept apart from Session so the optimizer and clipping test without a plan. */
#pragma once
#include <cstdint>
#include <vector>

#include "base/tensor.h"

namespace lmrt {

struct ParamView {
  DType dtype = DType::F32;
  void *value = nullptr;
  void *grad = nullptr;
  int64_t numel = 0;
  bool weightDecay = false;
  bool frozen = false;  // a frozen parameter: AdamW leaves it (and its moments) as they are
};

}  // namespace lmrt

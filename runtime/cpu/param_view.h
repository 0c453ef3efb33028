/* Implements: the optimizer's view of one parameter: its value and gradient
   storage (f32 or f64, the same for both), its shape, and what its parameter
   group says: weight decay, the learning rate's multiplier, LAMB's trust ratio.
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
  bool frozen = false;  // a frozen parameter: the optimizer leaves it (and its state) as it is
  double lrScale = 1.0;  // its parameter group's learning-rate multiplier
  bool trustRatio = false;  // LAMB scales its update by the trust ratio
  Shape shape = {};      // Adafactor factors rank >= 2; empty: [numel]
  // Where AdamW also writes the updated value rounded to copyType (bf16 or f16), as the
  // `cast` kernel rounds it: a mixed-precision plan's kept parameter copy
  // (contract.h's keptParamCopies). Null: none.
  void *copy = nullptr;
  DType copyType = DType::BF16;
};

}  // namespace lmrt

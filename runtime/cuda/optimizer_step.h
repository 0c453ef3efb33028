/* Implements: the scalars of one update of the plan's optimizer for the CUDA
   kernels (optimizer_chunks.h's OptimizerStep), from its settings, the learning rate
   and the update count t; shared by the backend, its GPU unit test and the kernels'
   CPU emulation test, so all launch the kernels the same way. Host-only (not for
   nvcc's device code). */
#pragma once
#include <algorithm>
#include <cmath>

#include "runtime/cuda/optimizer_chunks.h"
#include "runtime/exec/optimizer.h"

namespace lmrt::cuda {

inline OptimizerStep stepScalars(const OptimizerConfig &c, double lr, int64_t update) {
  const double t = (double)update;
  OptimizerStep s{};
  s.lr = lr, s.beta1 = c.beta1, s.beta2 = c.beta2, s.eps = c.eps, s.weightDecay = c.weightDecay;
  s.momentum = c.momentum, s.clipValue = c.clipValue, s.nesterov = c.nesterov, s.first = update == 1;
  s.bc1 = 1.0 - std::pow(c.beta1, t), s.bc2 = 1.0 - std::pow(c.beta2, t);
  s.eps2 = c.eps2, s.clipThreshold = c.clipThreshold, s.beta2t = 1.0 - std::pow(t, c.decayRate);
  // Adafactor's relative step (HF's _get_lr), or the schedule's rate.
  s.relStep = c.relativeStep ? std::min(c.warmupInit ? 1e-6 * t : 1e-2, 1.0 / std::sqrt(t)) : lr;
  s.scaleParameter = c.scaleParameter;
  return s;
}

}  // namespace lmrt::cuda

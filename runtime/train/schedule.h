/* Implements: the learning-rate schedule of a plan's TrainConfig.

   For 0-based step s (the s-th optimizer update), peak lr, warmup W:
     s < W                    lr * (s + 1) / (W + 1)           linear warmup
     kind "constant", s >= W  lr
     kind "cosine",   s >= W  min_lr + (lr - min_lr) * (1 + cos(pi * r)) / 2,
                              r = (s - W) / (D - W), clamped to [0, 1]
   D is decay_steps, or the run's total steps when decay_steps is 0, and counts
   from step 0 (warmup included), as in nanoGPT; after D the rate stays min_lr. */
#pragma once
#include <cstdint>
#include <string>

namespace lmrt {

struct LrSchedule {
  std::string kind = "constant";  // "constant" | "cosine"
  double lr = 1e-3;
  double minLr = 0.0;
  int64_t warmupSteps = 0;
  int64_t decaySteps = 0;  // resolved: never 0 for "cosine"
};

/* Checks the kind and the numbers; `runSteps` resolves decay_steps == 0. */
LrSchedule makeSchedule(const std::string &kind, double lr, double minLr, int64_t warmup,
                        int64_t decaySteps, int64_t runSteps);

double learningRate(const LrSchedule &s, int64_t step);

}  // namespace lmrt

/* Implements: the learning-rate schedule of a plan's TrainConfig.

   For 0-based step s (the s-th optimizer update), peak lr, warmup W, decay end D:
     s < W                    lr * (s + 1) / (W + 1)           linear warmup
     kind "constant", s >= W  lr
     kind "linear",   s >= W  lr - (lr - min_lr) * r,          r = (s - W) / (D - W)
     kind "cosine",   s >= W  min_lr + (lr - min_lr) * (1 + cos(pi * r)) / 2
     kind "wsd",      s >= W  warmup-stable-decay (MiniCPM, Hu et al. 2024): lr until
                              the cooldown starts at S = D - C, C = round(f * (D - W)),
                              then lr - (lr - min_lr) * (s - S) / C (linear to min_lr)
   r and the cooldown fraction are clamped to [0, 1]. D is decay_steps, or the
   run's total steps when decay_steps is 0, and counts from step 0 (warmup
   included), as in nanoGPT; from D on the rate stays min_lr. f is the plan's
   cooldown_fraction (wsd only). The kinds, defaults and bounds are the train
   settings' table (contract/train_settings.h). */
#pragma once
#include <cstdint>
#include <string>

#include "contract/train_settings.h"

namespace lmrt {

struct LrSchedule {
  std::string kind = settings::kDefaultSchedule;  // settings::schedules()
  double lr = settings::kLr.defaultValue;
  double minLr = 0.0;
  int64_t warmupSteps = 0;
  int64_t decaySteps = 0;        // resolved: never 0 for a decaying kind
  double cooldownFraction = 0;   // wsd
  int64_t cooldownSteps = 0;     // wsd, resolved: C above
};

/* Checks the kind and the numbers against the train settings' table;
   `runSteps` resolves decay_steps == 0. A kind that takes no cooldown ignores
   `cooldownFraction`, so a plan's cooldown_fraction (0 there) may be passed as is.
   A `warmupFraction` > 0 replaces `warmup` (which must then be 0): ceil(fraction
   x the schedule's steps) warmup steps (settings::warmupSteps). */
LrSchedule makeSchedule(const std::string &kind, double lr, double minLr, int64_t warmup,
                        int64_t decaySteps, int64_t runSteps,
                        double cooldownFraction = settings::kCooldown.defaultValue, double warmupFraction = 0);

double learningRate(const LrSchedule &s, int64_t step);

}  // namespace lmrt

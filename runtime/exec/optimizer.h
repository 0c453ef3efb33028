/* Implements: the optimizer a plan asks for, read once for every backend: its kind
   (lmrt implements "adamw") and hyperparameters. The update itself is each
   backend's: runtime/cpu/adamw.h on the host, runtime/cuda/optimizer.h on a GPU,
   both following the formulas of adamw.h. */
#pragma once
#include "contract/plan.pb.h"
#include "contract/train_settings.h"

namespace lmrt {

/* AdamW's hyperparameters; the defaults are the train settings' (contract/train_settings.h). */
struct AdamWConfig {
  double beta1 = settings::kBeta1.defaultValue;
  double beta2 = settings::kBeta2.defaultValue;
  double eps = settings::kEps.defaultValue;
  double weightDecay = settings::kBareModuleWeightDecay;
};

/* The plan's AdamW settings; throws naming the optimizer when the plan asks for one
   lmrt does not implement. */
AdamWConfig adamwConfig(const plan::Plan &plan);

/* Global-norm gradient clipping's factor, as torch.nn.utils.clip_grad_norm_:
   max_norm / (norm + 1e-6) when max_norm > 0 and the norm exceeds it, else 1. A
   non-finite norm is an Error. Every backend's update multiplies each gradient
   by it as it reads it. */
double clipScale(double norm, double maxNorm);

}  // namespace lmrt

/* Implements: global-norm gradient clipping, as torch.nn.utils.clip_grad_norm_:
   norm = sqrt(sum of g^2 over every gradient), accumulated in double whatever
   the parameter precision; if max_norm > 0 and norm > max_norm, every gradient
   is scaled by max_norm / (norm + 1e-6). */
#pragma once
#include <vector>

#include "runtime/cpu/param_view.h"
#include "runtime/exec/optimizer.h"  // clipScale

namespace lmrt {

double globalGradNorm(const std::vector<ParamView> &params);


/* Scales the gradients in place when needed; returns the scale applied (1 if none).
   `norm` is the value globalGradNorm returned. The training loop instead hands
   clipScale() to AdamW::step, which folds it into its single pass over the gradients
   (the same products, without a pass of its own). */
double clipGradients(const std::vector<ParamView> &params, double norm, double maxNorm);

}  // namespace lmrt

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

/* The pieces of that sum, for ZeRO-2, which holds slices of the gradients (zero_shards.h):
   each gradient's squares are summed in blocks of kGradNormBlock elements (the last one
   shorter), each block in a fixed order of its own (gradBlockSumSquares), and the blocks'
   sums added in block order from 0 (gradSumSquares); the norm adds the gradients' sums in
   parameter order from 0. Whoever holds a whole block computes its exact sum. */
constexpr int64_t kGradNormBlock = 65536;
double gradBlockSumSquares(const void *g, DType dtype, int64_t len);
double gradSumSquares(const void *g, DType dtype, int64_t n);


/* Scales the gradients in place when needed; returns the scale applied (1 if none).
   `norm` is the value globalGradNorm returned. The training loop instead hands
   clipScale() to AdamW::step, which folds it into its single pass over the gradients
   (the same products, without a pass of its own). */
double clipGradients(const std::vector<ParamView> &params, double norm, double maxNorm);

}  // namespace lmrt

/* Implements: the optimizer's kernels on the GPU, over the backend's flat
   parameter storage (every parameter in one allocation, the gradients and both
   AdamW moments in allocations of the same layout, see session.h):
   - the global gradient norm: fixed blocks of the flat gradients summed in
     double, then the blocks in order (the same bits every run), followed on the
     device by clipping's factor, max_norm / (norm + 1e-6) when the norm exceeds
     max_norm > 0, else 1 (as torch.nn.utils.clip_grad_norm_);
   - AdamW over all parameters in one launch: a block per chunk of at most 64 Ki
     elements of one parameter (the chunk says whether weight decay applies),
     the formula of runtime/cpu/adamw.h, the gradient multiplied by clipping's
     factor (clipScale of runtime/exec/optimizer.h, computed on the host from the
     norm) as it is read;
   - gradient accumulation over micro-batches, as the CPU backend's. */
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "base/tensor.h"

namespace lmrt::cuda {

/* Blocks of the norm's first pass; the partial sums need this many doubles. */
constexpr int kNormBlocks = 1024;

struct AdamWChunk {
  int64_t begin, end;  // element range in the flat storage
  int32_t decay;       // 1: weight decay applies to this parameter
};

struct AdamWStep {
  double lr, beta1, beta2, eps, weightDecay;
  double bc1, bc2;  // 1 - beta1^t, 1 - beta2^t
};

/* normOut[0] = sqrt(sum of g^2), normOut[1] = clipping's factor for maxNorm. */
void launchGradNorm(DType dtype, const void *grads, int64_t n, double *partials, double *normOut, double maxNorm,
                    cudaStream_t stream);

void launchAdamW(DType dtype, void *params, const void *grads, void *m, void *v, const AdamWChunk *chunks,
                 int64_t numChunks, double gradScale, const AdamWStep &step, cudaStream_t stream);

/* After micro-batch `micro` of `count`: micro 0 copies the gradients into `acc`, the
   middle ones add them, the last leaves (acc + grads) / count in the gradients. */
void launchAccumulate(DType dtype, void *grads, void *acc, int64_t n, int micro, int count, cudaStream_t stream);

}  // namespace lmrt::cuda

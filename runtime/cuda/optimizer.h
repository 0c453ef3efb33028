/* Implements: the optimizer's kernels on the GPU, over the backend's flat
   parameter storage (every parameter in one allocation, the gradients and both
   AdamW moments in allocations of the same layout, see session.h):
   - the gradient norm's blocks (norm_blocks.h, norm_kernels.cuh: what the backend sums,
     each gradient in blocks of 64 Ki elements, or under ZeRO stages 2 and 3 the blocks a
     rank owns; the host adds the blocks' sums in order and computes clipping's factor);
   - AdamW over all parameters in one launch (adamw_kernels.cuh): a block per chunk
     (optimizer_chunks.h) of at most 64 Ki elements of one parameter (the chunk says
     whether weight decay applies), contract/adamw_math.h's element (the CPU's bits),
     the gradient multiplied by
     clipping's factor (clipScale of runtime/exec/optimizer.h, computed on the host from
     the norm) as it is read;
   - gradient accumulation over micro-batches, as the CPU backend's. */
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "base/tensor.h"
#include "runtime/cuda/norm_blocks.h"
#include "runtime/cuda/optimizer_chunks.h"

namespace lmrt::cuda {

/* The other optimizers (optimizers.cu; their kernels in optimizer_kernels.cuh, with
   optimizer_chunks.h's ParamSlice and OptimizerStep), with the CPU's formulas
   (runtime/cpu/optimizers.cpp). SGD and Lion are elementwise: AdamW's chunks.
   LAMB and Adafactor reduce over each parameter (norms, means, RMS): a block per
   parameter. */

/* `m` is the momentum buffer; none (nullptr) for plain SGD. */
void launchSgd(DType dtype, void *params, const void *grads, void *m, const AdamWChunk *chunks, int64_t numChunks,
               double gradScale, const OptimizerStep &step, cudaStream_t stream);
void launchLion(DType dtype, void *params, const void *grads, void *m, const AdamWChunk *chunks, int64_t numChunks,
                double gradScale, const OptimizerStep &step, cudaStream_t stream);
void launchLamb(DType dtype, void *params, const void *grads, void *m, void *v, const ParamSlice *slices,
                int64_t numSlices, double gradScale, const OptimizerStep &step, cudaStream_t stream);
/* s0, s1: a factored parameter's row and column statistics, else s0 its second moment. */
void launchAdafactor(DType dtype, void *params, const void *grads, void *s0, void *s1, const ParamSlice *slices,
                     int64_t numSlices, double gradScale, const OptimizerStep &step, cudaStream_t stream);

/* Tensor parallelism's gradient norm (cuda_backend.cpp) sums each parameter's squares
   apart, as the CPU's gradSumSquares: blocks of at most kGradNormBlock elements of one
   parameter, out[b] = the sum of block b's squares (double, a fixed order), which the host
   adds up per parameter in block order. */
void launchBlockSumSquares(DType dtype, const void *grads, const NormBlock *blocks, int64_t numBlocks, double *out,
                           cudaStream_t stream);

/* ZeRO stages 2 and 3: out[b] = the sum of squares of this rank's owned block b (norm_blocks.h's
   SliceNorm), read from its gradient slices `grads` and every rank's `heads` (rank q's at q *
   headStride): the bits blockSumSquares gives the same block of the whole gradient. */
void launchOwnedBlockSumSquares(DType dtype, const void *grads, const void *heads, int64_t headStride,
                                const OwnedNormBlock *blocks, int64_t numBlocks, double *out, cudaStream_t stream);

void launchAdamW(DType dtype, void *params, const void *grads, void *m, void *v, const AdamWChunk *chunks,
                 int64_t numChunks, double gradScale, const AdamWStep &step, cudaStream_t stream);

/* After micro-batch `micro` of `count`: micro 0 copies the gradients into `acc`, the
   middle ones add them, the last leaves (acc + grads) / count in the gradients. */
void launchAccumulate(DType dtype, void *grads, void *acc, int64_t n, int micro, int count, cudaStream_t stream);

}  // namespace lmrt::cuda

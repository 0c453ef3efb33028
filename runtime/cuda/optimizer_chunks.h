/* Implements: the chunk table and step scalars of the elementwise optimizer kernels
   (AdamW in adamw_kernels.cuh, SGD and Lion in optimizers.cu; zero_chunks.h builds the
   tables): plain structs, read by the kernels and filled on the host, without CUDA headers,
   so that the kernels' CPU emulation (test/Unit/cuda_emu) builds them too. */
#pragma once
#include <cstdint>

namespace lmrt::cuda {

struct AdamWChunk {
  int64_t begin, end;  // element range in the flat storage
  int32_t decay;       // 1: weight decay applies to this parameter
  double lrScale;      // its parameter group's learning-rate multiplier
  /* Element i's optimizer state is at i - stateShift of the state storage: 0 when the
     state has the parameters' layout; a ZeRO rank keeps only its slices' state, packed
     (zero_chunks.h). */
  int64_t stateShift = 0;
  /* Element i's gradient is at i - gradShift of the gradient storage: 0 when the gradients
     have the parameters' layout; from ZeRO stage 2 on a rank keeps only its gradient slices
     (zero_chunks.h). */
  int64_t gradShift = 0;
};

struct AdamWStep {
  double lr, beta1, beta2, eps, weightDecay;
  double bc1, bc2;  // 1 - beta1^t, 1 - beta2^t
  double clipValue = 0;  // clip_grad_value (0: off), applied after clipping's factor
};

}  // namespace lmrt::cuda

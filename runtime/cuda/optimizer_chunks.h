/* Implements: the chunk table and step scalars of the elementwise optimizer kernels
   (AdamW in adamw_kernels.cuh, SGD and Lion in optimizer_kernels.cuh; zero_chunks.h builds
   the tables), and the parameter table and step scalars of the others (optimizer_kernels.cuh):
   plain structs, read by the kernels and filled on the host, without CUDA headers, so that
   the kernels' CPU emulation (test/Unit/cuda_emu) builds them too. */
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

/* A parameter of LAMB and Adafactor, which reduce over each parameter (norms, means,
   RMS): a block per parameter, its sums in a fixed order (the same bits every run);
   simple rather than fast, and a large embedding is then one block's work. */
struct ParamSlice {
  int64_t offset, numel;  // element range in the flat storage
  int64_t rows, cols;     // Adafactor: the last two dimensions (factored when rows > 0)
  int32_t decay, trust;   // weight decay applies; LAMB's trust ratio applies
  double lrScale;
};

/* The hyperparameters and the update count's scalars of one step of SGD, Lion, LAMB or
   Adafactor (optimizer_step.h's stepScalars). */
struct OptimizerStep {
  double lr, beta1, beta2, eps, weightDecay, momentum, clipValue;
  int32_t nesterov, first;  // sgd: Nesterov; the first update (the buffer starts as the gradient)
  double bc1, bc2;          // lamb: 1 - beta1^t, 1 - beta2^t
  double eps2, clipThreshold, beta2t;  // adafactor: beta2t = 1 - t^decay_rate
  double relStep;                     // adafactor: the step size before scale_parameter (rho_t, or lr)
  int32_t scaleParameter;
};

}  // namespace lmrt::cuda

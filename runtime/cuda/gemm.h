/* Implements: GEMMs on cuBLASLt, in the row-major terms of lm.matmul:
     C[b] = op(A[b]) op(B[b]) (+ epilogue)   for b < batch,
   op(X) = X or X^T, batch elements `stride*` elements apart (0: one matrix shared
   by all, as a rank-2 rhs is). cuBLASLt is column-major, so the call computes
   C^T = op(B)^T op(A)^T, which has the same bytes. Epilogues fuse into the GEMM:
     Bias      C = op(A) op(B) + bias[n]             (a linear layer)
     GeluBias  C = gelu_tanh(op(A) op(B) + bias[n])  (GPT-2's MLP up-projection)
     BiasGrad  C = op(A) op(B), and biasGrad[n] = sum over k of op(B)'s rows
               (with A = X^T, B = dY: dW and db of a linear layer in one call).
   Descriptors and the heuristic's algorithm are cached per shape. f32 (strict
   f32, or TF32 tensor cores when asked), f64, and bf16 or f16 operands with fp32
   accumulation into an f32 C (mixed precision; gemm_desc.h has the types). */
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <tuple>

#include "runtime/cuda/device.h"
#include "base/tensor.h"

namespace lmrt::cuda {

enum class Epilogue { None, Bias, GeluBias, BiasGrad };

struct GemmArgs {
  DType dtype = DType::F32;  // A's and B's; C's is gemmResultType(dtype) (gemm_desc.h): f32 for bf16 and f16
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  const void *a = nullptr;
  int64_t lda = 0, strideA = 0;
  const void *b = nullptr;
  int64_t ldb = 0, strideB = 0;
  void *c = nullptr;
  int64_t ldc = 0, strideC = 0;
  Epilogue epilogue = Epilogue::None;
  const void *bias = nullptr;  // Bias, GeluBias: [n]
  void *biasGrad = nullptr;    // BiasGrad: [n]
  bool accumulate = false;     // C += op(A) op(B) (beta 1; no epilogue): a sum over chunks
};

class Gemm {
public:
  /* tf32: f32 GEMMs run on TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32). */
  Gemm(cudaStream_t stream, bool tf32);
  ~Gemm();
  Gemm(const Gemm &) = delete;
  Gemm &operator=(const Gemm &) = delete;
  void run(const GemmArgs &args);
  bool tf32() const { return tf32_; }

private:
  struct Plan;
  using Key = std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int, int>;
  Plan &plan(const GemmArgs &args, int align);
  cudaStream_t stream_;
  bool tf32_;
  void *handle_ = nullptr;  // cublasLtHandle_t
  DeviceBuffer workspace_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace lmrt::cuda

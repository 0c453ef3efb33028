/* Implements: what a cuBLASLt GEMM of gemm.h is, as plain data, decided on the
   host without a GPU (so a unit test checks it where there is none): the compute
   and scale types, each matrix's data type and column-major layout, the
   transposes and the epilogue. Gemm::run (gemm.cpp) turns it into cuBLASLt
   descriptors, one call per field.

   Types by operand dtype (GemmArgs::dtype, the type of A and B):
     f32         A, B, C f32; CUBLAS_COMPUTE_32F (CUBLAS_COMPUTE_32F_FAST_TF32 with tf32)
     f64         A, B, C f64; CUBLAS_COMPUTE_64F
     bf16 / f16  A, B CUDA_R_16BF / CUDA_R_16F, C = D f32; CUBLAS_COMPUTE_32F (never
                 TF32: the products of two 16-bit numbers are exact in fp32), alpha and
                 beta f32. As the CPU's bf16 GEMM (runtime/cpu/kernels/gemm_bf16.cpp):
                 reduced-precision operands, fp32 accumulation and result.
   Row-major lm.matmul terms to cuBLASLt's column-major: C^T = op(B)^T op(A)^T, so
   cuBLASLt's A is our B and its B our A (gemm.h). */
#pragma once
#include <cublasLt.h>

#include <cstdint>

#include "runtime/cuda/gemm.h"

namespace lmrt::cuda {

struct GemmLayout {
  cudaDataType_t type;
  uint64_t rows = 0, cols = 0;  // column-major
  int64_t ld = 0, batch = 1, stride = 0;
};

struct GemmDesc {
  cublasComputeType_t compute;
  cudaDataType_t scale;           // alpha and beta
  cublasOperation_t opA, opB;     // cuBLASLt's A (our B) and B (our A)
  cublasLtEpilogue_t epilogue;
  GemmLayout a, b, c;             // cuBLASLt's A (our B), B (our A), C = D
};

/* The data type of C (and D) for operands of `operands`' type: f32 for bf16 and f16. */
DType gemmResultType(DType operands);

/* Throws lmrt::Error naming `op` unless lhs and rhs share one type and the result
   is gemmResultType of it (what the CUDA GEMMs compute). */
void checkGemmTypes(const char *op, DType lhs, DType rhs, DType result);

/* Throws lmrt::Error for an operand type cuBLASLt is not asked to run here (i32),
   or an epilogue with reduced-precision operands (no plan asks for one). */
GemmDesc describeGemm(const GemmArgs &args, bool tf32);

}  // namespace lmrt::cuda

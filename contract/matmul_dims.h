/* Implements: an lm.matmul's GEMM sizes from its operand shapes (the CPU and CUDA
   kernels), and the one CPU form that keeps host scratch beyond its operands, in plain
   C++ (no MLIR, no BLAS), so that the kernel (matmul.cpp) and the plan's memory
   prediction (predictedMemory() in contract/contract.h) cannot disagree on when it
   is taken or how large the scratch is. */
#pragma once
#include <cstdint>

namespace lmrt::kernels {

/* A matmul's GEMM sizes from its operand shapes (any indexable with size(), rank >= 2):
   lhs [..., M, K] ([..., K, M] when transposed), rhs [K, N] or [..., K, N] ([.., N, K]
   when transposed); batch is the product of lhs's leading dimensions. */
struct MatmulDims {
  int64_t batch = 1, m = 0, n = 0, k = 0;
};
template <typename Shape> MatmulDims matmulDims(const Shape &lhs, const Shape &rhs, bool ta, bool tb) {
  const size_t r = (size_t)lhs.size(), rr = (size_t)rhs.size();
  MatmulDims d;
  for (size_t i = 0; i + 2 < r; ++i) d.batch *= lhs[i];
  d.m = ta ? lhs[r - 1] : lhs[r - 2];
  d.k = ta ? lhs[r - 2] : lhs[r - 1];
  d.n = tb ? rhs[rr - 2] : rhs[rr - 1];
  return d;
}

/* C [m, n] = A^T B for a tall, narrow output (a weight gradient X^T dY whose input side is
   the wider: GPT's second MLP matrix [4d, d] and the tied embedding [V, d], with the
   B*T tokens as K). oneDNN's transposed-A GEMM ran these at 220-240 GFLOP/s on two
   cores where the same products as C^T = B^T A, a wide output, ran at 260-310, so the
   kernel computes C^T into a scratch buffer and transposes it. With a wide or large
   output the transpose costs more than it saves. */
inline bool tallTransposedLhs(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k) {
  return ta && !tb && batch == 1 && n <= 256 && m >= 4 * n && k >= 512 && m * n <= (int64_t{1} << 22);
}

/* The scratch that form keeps: one [n, m] buffer of the element type, held by the
   calling thread between calls and grown to the largest such matmul it has run (at
   most 4Mi elements, 16 MiB in f32). 0 for every other matmul. */
inline int64_t matmulScratchBytes(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k,
                                  int64_t elementBytes) {
  return tallTransposedLhs(ta, tb, batch, m, n, k) ? m * n * elementBytes : 0;
}

}  // namespace lmrt::kernels

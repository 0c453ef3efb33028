/* Implements: the row kernels of lm.linear_cross_entropy_stats and _stats_grad, the
   vocabulary-parallel loss's rank part (runtime/cuda/vocab_parallel.cu runs them between
   the cuBLASLt GEMMs of each chunk of rows; the formulas are the CPU kernel's,
   runtime/cpu/kernels/linear_cross_entropy.cpp). The rank holds classes
   [first, first + Vr) of a vocabulary of `vocab`, bias [Vr] their biases; z is a
   chunk's [c, Vr] logits h w, to which the row kernels add the bias.
   - stats: one block per row: z += bias, then lse = max + log(sum exp(z - max)) over the
     rank's classes, the target's logit when the target is one of them, else 0, the max
     and the first class holding it (first + j, as a float), NaN logits skipped as
     lm.accuracy skips them (a row of NaNs: max -inf, class `vocab`);
   - grad: dz = dlse exp(z + bias - lse) + dtarget onehot(target - first), in place, then
     columnSums adds dz's columns into dbias (each column's rows in order, as the CPU).
   `first` is read on the device (a plan computes it: lm.axis_index times Vr), so no
   host round trip; a first that is not a whole number >= 0, or a target outside the
   vocabulary that is not ignore_index (lmrt checks token inputs on the host first),
   makes the row's results NaN instead of reading out of bounds, which the training loop
   reports as a diverged step. Only __syncthreads and __shfl_xor_sync synchronise, so the
   CPU emulation in test/Unit/cuda_emu runs them as they are, and runStats, the chunk
   loop, with its GEMMs on the CPU. */
#pragma once
#include <cmath>
#include <cstdint>

#include "contract/scalar_math.h"
#include "runtime/cuda/block_reduce.cuh"

namespace lmrt::cuda::vocab {

using detail::blockMax;
using detail::blockSum;

constexpr int kThreads = 256;

/* The rank's first class from its device scalar; -1 when it is not a whole number >= 0. */
template <typename T> __device__ int64_t firstClass(const T *first) {
  const T f = first[0];
  return f >= T(0) && f == floor(f) && f < T(9.0e15) ? (int64_t)f : -1;
}

/* Whether target t is a class of the vocabulary or ignore_index; else its row is NaN. */
__device__ inline bool validTarget(int32_t t, int64_t vocab, int64_t ignore) {
  return t == ignore || (t >= 0 && t < vocab);
}

template <typename T>
__global__ void statsRows(T *z, const int32_t *tg, const T *first, const T *bias, int64_t rows, int64_t v,
                          int64_t vocab, int64_t ignore, T *lse, T *targetLogit, T *rowMax, T *argmax) {
  const int64_t f = firstClass(first);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T *zr = z + r * v;
    T mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
      zr[j] += bias[j];
      if (zr[j] > mx) mx = zr[j];  // a NaN is skipped (lm.accuracy's rule), as the CPU's
    }
    mx = blockMax(mx);  // (its barriers also order the bias's adds before thread 0 reads z)
    T s = 0, firstMax = T(v);
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
      s += lmc::exp(zr[j] - mx);
      if (zr[j] == mx && T(j) < firstMax) firstMax = T(j);
    }
    s = blockSum(s);
    firstMax = -blockMax(-firstMax);  // the smallest class holding the max
    if (threadIdx.x != 0) continue;
    const int32_t t = tg[r];
    const int64_t local = (int64_t)t - f;
    const bool ok = f >= 0 && validTarget(t, vocab, ignore);
    lse[r] = ok ? mx + log(s) : T(NAN);
    targetLogit[r] = !ok ? T(NAN) : local >= 0 && local < v ? zr[local] : T(0);
    rowMax[r] = ok ? mx : T(NAN);
    // A row of NaNs holds no max: class `vocab`, which no target is.
    argmax[r] = !ok ? T(NAN) : firstMax < T(v) ? T(f) + firstMax : T(vocab);
  }
}

/* dz in place of z. Each element is read and written by one thread; the target's
   element is added to by thread 0 after a barrier, once every thread has written it. */
template <typename T>
__global__ void statsGradRows(T *z, const int32_t *tg, const T *first, const T *bias, int64_t rows, int64_t v,
                              int64_t vocab, int64_t ignore, const T *lse, const T *dlse, const T *dtarget) {
  const int64_t f = firstClass(first);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T *zr = z + r * v;
    const int32_t t = tg[r];
    const bool ok = f >= 0 && validTarget(t, vocab, ignore);
    const T l = lse[r], g = ok ? dlse[r] : T(NAN);
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) zr[j] = g * lmc::exp(zr[j] + bias[j] - l);
    __syncthreads();  // the target's element may have been written by another thread
    const int64_t local = (int64_t)t - f;
    if (threadIdx.x == 0 && ok && local >= 0 && local < v) zr[local] += dtarget[r];
  }
}

/* dbias[j] (+)= sum over the chunk's c rows of dz[i, j]: a thread a column, its rows in
   order (the CPU kernel's order, chunk after chunk). */
template <typename T> __global__ void columnSums(const T *dz, int64_t c, int64_t v, T *dbias, bool accumulate) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < v; j += (int64_t)gridDim.x * blockDim.x) {
    T s = accumulate ? dbias[j] : T(0);
    for (int64_t i = 0; i < c; ++i) s += dz[i * v + j];
    dbias[j] = s;
  }
}

/* Blocks for `rows` rows, one a row up to the grid's limit (the kernels stride). */
inline unsigned rowBlocks(int64_t rows) {
  return (unsigned)(rows < 1 ? 1 : rows > (1 << 16) ? (1 << 16) : rows);
}

/* One GEMM in lm.matmul's row-major terms: c [m, n] = op(a) op(b), or += with accumulate. */
template <typename T> struct Gemm {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  const T *a = nullptr;
  int64_t lda = 0;
  const T *b = nullptr;
  int64_t ldb = 0;
  T *c = nullptr;
  int64_t ldc = 0;
  bool accumulate = false;
};

/* One call of either op. Forward: lse, targetLogit, rowMax and argmax set; gradient:
   lseIn, dlse, dtarget, dh, dw and dbias set. bias: [v], always. z: [chunk, v] of scratch. */
template <typename T> struct StatsCall {
  const T *h, *w, *first;
  const int32_t *tg;
  bool tb;  // w is [v, d] (a tied table), else [d, v]
  int64_t rows, v, d, chunk, vocab, ignore;
  T *z;
  const T *bias = nullptr;
  T *lse = nullptr, *targetLogit = nullptr, *rowMax = nullptr, *argmax = nullptr;
  const T *lseIn = nullptr, *dlse = nullptr, *dtarget = nullptr;
  T *dh = nullptr, *dw = nullptr, *dbias = nullptr;
};

/* The op, chunk by chunk: launch(kernel, blocks, threads, args...) launches a row kernel
   (on a stream, or on the emulation), gemm(Gemm<T>) runs a GEMM (cuBLASLt, or the test's).
   With no rows the gradient's dw and dbias are the caller's to zero (nothing writes them). */
template <typename T, typename L, typename G> void runStats(const StatsCall<T> &s, L &&launch, G &&gemm) {
  const bool withGrad = s.dh != nullptr;
  for (int64_t r0 = 0; r0 < s.rows; r0 += s.chunk) {
    const int64_t c = s.rows - r0 < s.chunk ? s.rows - r0 : s.chunk;
    const T *hc = s.h + r0 * s.d;
    Gemm<T> g;  // z [c, v] = h_c w^T (w [v, d]) or h_c w (w [d, v])
    g.tb = s.tb;
    g.m = c, g.n = s.v, g.k = s.d;
    g.a = hc, g.lda = s.d;
    g.b = s.w, g.ldb = s.tb ? s.d : s.v;
    g.c = s.z, g.ldc = s.v;
    gemm(g);
    if (!withGrad) {
      launch(statsRows<T>, rowBlocks(c), kThreads, s.z, s.tg + r0, s.first, s.bias, c, s.v, s.vocab, s.ignore,
             s.lse + r0, s.targetLogit + r0, s.rowMax + r0, s.argmax + r0);
      continue;
    }
    launch(statsGradRows<T>, rowBlocks(c), kThreads, s.z, s.tg + r0, s.first, s.bias, c, s.v, s.vocab, s.ignore,
           s.lseIn + r0, s.dlse + r0, s.dtarget + r0);
    const int64_t columnBlocks = (s.v + kThreads - 1) / kThreads;
    launch(columnSums<T>, (unsigned)(columnBlocks > (1 << 16) ? (1 << 16) : columnBlocks), kThreads,
           (const T *)s.z, c, s.v, s.dbias, r0 > 0);
    Gemm<T> dh;  // dh_c [c, d] = dz_c w (w [v, d]) or dz_c w^T (w [d, v])
    dh.tb = !s.tb;
    dh.m = c, dh.n = s.d, dh.k = s.v;
    dh.a = s.z, dh.lda = s.v;
    dh.b = s.w, dh.ldb = s.tb ? s.d : s.v;
    dh.c = s.dh + r0 * s.d, dh.ldc = s.d;
    gemm(dh);
    Gemm<T> dw;  // dw [v, d] += dz_c^T h_c, or dw [d, v] += h_c^T dz_c; the first chunk overwrites
    dw.ta = true;
    dw.m = s.tb ? s.v : s.d, dw.n = s.tb ? s.d : s.v, dw.k = c;
    dw.a = s.tb ? (const T *)s.z : hc, dw.lda = s.tb ? s.v : s.d;
    dw.b = s.tb ? hc : (const T *)s.z, dw.ldb = s.tb ? s.d : s.v;
    dw.c = s.dw, dw.ldc = s.tb ? s.d : s.v;
    dw.accumulate = r0 > 0;
    gemm(dw);
  }
}

}  // namespace lmrt::cuda::vocab

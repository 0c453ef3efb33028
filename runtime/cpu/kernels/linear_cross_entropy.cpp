/* Implements: lm.linear_cross_entropy and lm.linear_cross_entropy_with_grad, the
   output projection and the cross-entropy chunked over rows (Liger Kernel's
   FusedLinearCrossEntropy): per chunk of chunk_rows rows, the logits GEMM into one
   [chunk, V] scratch, each row's loss (and its gradient, in place, with the formulas
   of softmax.cpp's cross_entropy_with_grad), then dh_chunk = dlogits @ w and
   dw += dlogits^T h_chunk. The whole [rows, V] logits never exist. The GEMMs are
   split over the OpenMP threads by the longer side of their output (each output
   element is one BLAS dot product, so the bits do not depend on the thread count);
   the chunked GEMMs may round otherwise than one whole GEMM, and dw sums its chunks
   in chunk order. The scratch is thread-local and kept between calls, as
   contract/linear_cross_entropy.h predicts it.
   bf16 (or f16) h and w (-lm-mixed-precision): the three GEMMs run on the
   reduced-precision GEMM of blas.h (bf16 x bf16 -> f32 on oneDNN) into f32, the
   logits, softmax, loss, dh and dw are f32, and dw sums its chunks in f32 (beta 1
   into the f32 result); the backward GEMMs read the chunk's logit gradient rounded
   to the operands' type, written row by row beside the f32 one. */
#include <omp.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "contract/linear_cross_entropy.h"
#include "runtime/cpu/kernels/blas.h"
#include "runtime/cpu/kernels/cross_entropy_rows.h"
#include "runtime/cpu/kernels/parallel_errors.h"

namespace lmrt::kernels::detail {
namespace {

/* Below this many multiply-adds a GEMM runs on one thread (as lm.matmul's). */
constexpr int64_t kParallelFlops = 1 << 18;

/* c = op(a) op(b) + beta c, [m, n] with inner size k, split over the threads into
   16-column panels or blocks of at least 16 rows (the last takes the remainder) of
   the longer output side, as lm.matmul splits: oneDNN computes a GEMM of fewer rows
   another way, and the bits would then depend on the thread count. A operands
   (bf16, f16) accumulate into C = f32. */
template <typename A, typename C = A>
void gemmSplit(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const A *a, int64_t lda, const A *b, int64_t ldb,
               C beta, C *c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  // Inside a parallel region (chunkBackwardGemms' pair) the calling thread runs it all.
  const int nt = m * n * k >= kParallelFlops && !omp_in_parallel() ? omp_get_max_threads() : 1;
  const bool byCols = std::is_same_v<A, lmc::bf16> ? !bf16RowBlocks(ta, m, n) : n > m;
  const int64_t side = byCols ? n : m;
  int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(byCols ? side : side / 16, nt));
  int64_t per = byCols ? (side + blocks - 1) / blocks : side / blocks;
  if (byCols && blocks > 1) per = std::min(side, (per + 15) / 16 * 16);
  if constexpr (std::is_same_v<A, lmc::bf16>) {
    // As lm.matmul's bf16 GEMMs (matmul.cpp): oneDNN's bf16 matmul sums in an order
    // that depends on the block's shape, so the blocks are fixed by the shape alone
    // (bf16GemmBlock, blas.h; the last row block taking the remainder), never by
    // the thread count.
    per = bf16GemmBlock(side);
    blocks = (side + per - 1) / per;
    if (!byCols && blocks > 1 && side % per != 0) --blocks;
  }
  ParallelErrors errors;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && blocks > 1)
  for (int64_t t = 0; t < blocks; ++t) errors.run([&] {
    const int64_t i0 = t * per, i1 = !byCols && t == blocks - 1 ? side : std::min(side, i0 + per);
    if (i0 >= i1) return;
    if (byCols)  // columns j of op(B) start at column j of B, or at row j when B is stored transposed
      gemm(ta, tb, m, i1 - i0, k, (C)1, a, lda, b + (tb ? i0 * ldb : i0), ldb, beta, c + i0, ldc);
    else  // rows r of op(A) start at row r of A, or at column r when A is stored transposed
      gemm(ta, tb, i1 - i0, n, k, (C)1, a + (ta ? i0 : i0 * lda), lda, b, ldb, beta, c + i0 * ldc, ldc);
  });
  errors.rethrow();
}

bool reduced(DType t) { return t == DType::BF16 || t == DType::F16; }

/* The type of the logits, the loss and the gradients: f32 for bf16 or f16 operands. */
DType resultDType(DType h) { return reduced(h) ? DType::F32 : h; }

std::string checkCommon(const char *op, const std::vector<TensorType> &in, const Attrs &attrs) {
  if (!reduced(in[0].dtype)) LMRT_CHECK(expectFloat(op, "h", in[0]));
  LMRT_CHECK(expectSameDType(op, "w", in[1], "h", in[0]));
  LMRT_CHECK(expectI32(op, "targets", in[2]));
  attrs.getInt("ignore_index");  // throw, so check() refuses them, unless of their kinds
  if (attrs.getInt("chunk_rows") < 0) return std::string(op) + ": chunk_rows must be >= 0";
  std::string err;
  if (!shapes::linearCrossEntropy(in[0].shape, in[1].shape, in[2].shape, attrs.getBool("transpose_rhs"), err))
    return std::string(op) + err.substr(err.find(':'));
  return "";
}

std::string checkLinearCrossEntropy(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                    const Attrs &attrs) {
  return guardCheck("linear_cross_entropy", in, out, 3, 1, [&]() -> std::string {
    LMRT_CHECK(checkCommon("linear_cross_entropy", in, attrs));
    return expectType("linear_cross_entropy", "loss", out[0], resultDType(in[0].dtype), {});
  });
}

std::string checkLinearCrossEntropyWithGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                            const Attrs &attrs) {
  const char *op = "linear_cross_entropy_with_grad";
  return guardCheck(op, in, out, 4, 3, [&]() -> std::string {
    LMRT_CHECK(checkCommon(op, in, attrs));
    const DType t = resultDType(in[0].dtype);
    LMRT_CHECK(expectType(op, "dloss", in[3], t, in[3].shape));
    if (!in[3].shape.empty()) return std::string(op) + ": dloss " + in[3].str() + " must be a scalar";
    LMRT_CHECK(expectType(op, "dh", out[0], t, in[0].shape));
    LMRT_CHECK(expectType(op, "dw", out[1], t, in[1].shape));
    return expectType(op, "loss", out[2], t, {});
  });
}

/* A chunk's backward GEMMs, the same for the fused loss and the vocabulary-parallel
   stats gradient: dh_c [c, D] = dz_c w (w [V, D], tb) or dz_c w^T (w [D, V]), and
   dw [V, D] += dz_c^T h_c, or dw [D, V] += h_c^T dz_c; the first chunk overwrites dw.
   The two are independent and of equal work: with a team of two threads they run at
   once, each whole on one thread, as lm.matmul's pairs (registry.h runMatmulPair);
   the bits are the same as one after the other, each cut between the threads. */
template <typename A, typename T>
void chunkBackwardGemms(bool tb, int64_t c, int64_t d, int64_t v, const A *dz, int64_t ldz, const A *w,
                        const A *hc, bool firstChunk, T *dhc, T *dw) {
  auto dh = [&] { gemmSplit<A, T>(false, !tb, c, d, v, dz, ldz, w, tb ? d : v, (T)0, dhc, d); };
  auto dwAdd = [&] {
    const T beta = firstChunk ? (T)0 : (T)1;
    if (tb)
      gemmSplit<A, T>(true, false, v, d, c, dz, ldz, hc, d, beta, dw, d);
    else
      gemmSplit<A, T>(true, false, d, v, c, hc, d, dz, ldz, beta, dw, v);
  };
  if (!runAsPair(dh, dwAdd)) {
    dh();
    dwAdd();
  }
}

/* Both ops: dh, dw null for the forward alone. T: the logits' and results' type;
   A: h's and w's (T, or bf16 / f16 with T = f32). */
template <typename T, typename A = T>
LMRT_SIMD_CLONES void linearCrossEntropyT(const KernelCall &call, const char *op, T *dh, T *dw, T *loss) {
  singleThreadedBlas();
  constexpr bool kReduced = !std::is_same_v<A, T>;
  const A *h = call.in[0].as<A>(), *w = call.in[1].as<A>();
  const int32_t *tg = call.in[2].as<int32_t>();
  const bool tb = call.attrs.getBool("transpose_rhs"), withGrad = dh != nullptr;
  const int64_t ignore = call.attrs.getInt("ignore_index");
  const Shape &hs = call.in[0].shape();
  const int64_t d = hs.back(), rows = call.in[2].numel();
  const int64_t v = tb ? call.in[1].shape()[0] : call.in[1].shape()[1];
  const int64_t valid = validateTargets(op, tg, rows, v, ignore);
  const T scale = withGrad && valid ? call.in[3].as<T>()[0] / (T)valid : (T)0;
  const int64_t chunk = linearCrossEntropyEffectiveChunk(call.attrs.getInt("chunk_rows"), rows);

  const int64_t ldx = linearCrossEntropyRowStride(v);  // the scratch's row stride
  thread_local std::vector<T> scratch;  // one chunk of logits, then of their gradient
  scratch.resize((size_t)(chunk * ldx));
  // With reduced operands, the gradient again in A, which the backward GEMMs read.
  thread_local std::vector<A> reducedScratch;
  if constexpr (kReduced)
    if (withGrad) reducedScratch.resize((size_t)(chunk * ldx));
  std::vector<double> rowLoss(rows, 0.0);
  T *x = scratch.data();
  // The gradient the backward GEMMs read; a pointer, for the parallel loop's threads
  // (each has its own thread_local vectors).
  A *dl = nullptr;
  if constexpr (kReduced)
    dl = reducedScratch.data();
  else
    dl = x;
  if (withGrad && rows == 0)
    for (int64_t i = 0; i < v * d; ++i) dw[i] = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t c = std::min(chunk, rows - r0);
    const A *hc = h + r0 * d;
    // logits [c, V] = h_c w^T (w [V, D]) or h_c w (w [D, V])
    gemmSplit<A, T>(false, tb, c, v, d, hc, d, w, tb ? d : v, (T)0, x, ldx);
#pragma omp parallel for schedule(static) if (c * v >= kParallelMin)
    for (int64_t i = 0; i < c; ++i) {
      T *xi = x + i * ldx;
      if (tg[r0 + i] == ignore) {
        if (withGrad) {
          for (int64_t j = 0; j < v; ++j) xi[j] = 0;
          if constexpr (kReduced)
            for (int64_t j = 0; j < v; ++j) dl[i * ldx + j] = lmc::fromFloat<A>(0.f);
        }
        continue;
      }
      if (withGrad) {
        rowLoss[r0 + i] = rowLossAndGrad<T>(xi, xi, v, tg[r0 + i], scale);
        if constexpr (kReduced) {  // rounded while the row is in cache
          A *ri = dl + i * ldx;
#pragma omp simd
          for (int64_t j = 0; j < v; ++j) ri[j] = lmc::fromFloat<A>(xi[j]);
        }
      } else {
        T mx, lse;
        rowLse(xi, v, mx, lse);
        rowLoss[r0 + i] = (double)(mx + lse - xi[tg[r0 + i]]);
      }
    }
    if (!withGrad) continue;
    chunkBackwardGemms<A, T>(tb, c, d, v, dl, ldx, w, hc, r0 == 0, dh + r0 * d, dw);
  }
  double s = 0;
  for (double l : rowLoss) s += l;
  *loss = valid ? (T)(s / valid) : (T)0;
}

/* f(T{}, A{}) for h's dtype: the operands' type A and the results' T. */
template <typename F> void dispatchOperands(DType h, F &&f) {
  if (h == DType::BF16) return f(float{}, lmc::bf16{});
  if (h == DType::F16) return f(float{}, lmc::f16{});
  dispatchFloat(h, [&](auto t) { f(t, t); });
}

void runLinearCrossEntropy(const KernelCall &call) {
  dispatchOperands(call.in[0].type.dtype, [&](auto t, auto a) {
    using T = decltype(t);
    linearCrossEntropyT<T, decltype(a)>(call, "linear_cross_entropy", nullptr, nullptr, call.out[0].as<T>());
  });
}

void runLinearCrossEntropyWithGrad(const KernelCall &call) {
  dispatchOperands(call.in[0].type.dtype, [&](auto t, auto a) {
    using T = decltype(t);
    linearCrossEntropyT<T, decltype(a)>(call, "linear_cross_entropy_with_grad", call.out[0].as<T>(),
                                        call.out[1].as<T>(), call.out[2].as<T>());
  });
}

/* The vocabulary-parallel loss's rank part: w holds classes [first, first + Vr), bias
   their biases. */
std::string checkStatsCommon(const char *op, const std::vector<TensorType> &in, const Attrs &attrs,
                             const std::vector<std::pair<const char *, const TensorType *>> &rows) {
  LMRT_CHECK(expectFloat(op, "h", in[0]));
  LMRT_CHECK(expectSameDType(op, "w", in[1], "h", in[0]));
  LMRT_CHECK(expectI32(op, "targets", in[2]));
  LMRT_CHECK(expectSameDType(op, "first", in[3], "h", in[0]));
  if (!in[3].shape.empty()) return std::string(op) + ": first " + in[3].str() + " must be a scalar";
  LMRT_CHECK(expectSameDType(op, "bias", in[4], "h", in[0]));
  attrs.getInt("ignore_index");  // throw, so check() refuses them, unless of their kinds
  const int64_t vocab = attrs.getInt("vocab");
  if (attrs.getInt("chunk_rows") < 0) return std::string(op) + ": chunk_rows must be >= 0";
  const bool tb = attrs.getBool("transpose_rhs");
  std::string err;
  std::vector<std::pair<const char *, const shapes::Dims *>> rowDims;
  for (const auto &[name, t] : rows) {
    LMRT_CHECK(expectSameDType(op, name, *t, "h", in[0]));
    rowDims.push_back({name, &t->shape});
  }
  if (!shapes::linearCrossEntropyStats(in[0].shape, in[1].shape, in[2].shape, in[4].shape, tb, err, op, rowDims))
    return err;
  const int64_t vr = tb ? in[1].shape[0] : in[1].shape[1];
  if (vocab < vr)
    return std::string(op) + ": vocab " + std::to_string(vocab) + " must be at least the rank's " +
           std::to_string(vr) + " classes (w " + in[1].str() + ")";
  return "";
}

std::string checkLinearCrossEntropyStats(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                         const Attrs &attrs) {
  const char *op = "linear_cross_entropy_stats";
  return guardCheck(op, in, out, 5, 4, [&]() -> std::string {
    LMRT_CHECK(checkStatsCommon(op, in, attrs, {}));
    LMRT_CHECK(expectType(op, "lse", out[0], in[0].dtype, in[2].shape));
    LMRT_CHECK(expectType(op, "target_logit", out[1], in[0].dtype, in[2].shape));
    LMRT_CHECK(expectType(op, "max", out[2], in[0].dtype, in[2].shape));
    return expectType(op, "argmax", out[3], in[0].dtype, in[2].shape);
  });
}

std::string checkLinearCrossEntropyStatsGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                             const Attrs &attrs) {
  const char *op = "linear_cross_entropy_stats_grad";
  return guardCheck(op, in, out, 8, 3, [&]() -> std::string {
    LMRT_CHECK(checkStatsCommon(op, in, attrs, {{"lse", &in[5]}, {"dlse", &in[6]}, {"dtarget", &in[7]}}));
    LMRT_CHECK(expectType(op, "dh", out[0], in[0].dtype, in[0].shape));
    LMRT_CHECK(expectType(op, "dw", out[1], in[0].dtype, in[1].shape));
    return expectType(op, "dbias", out[2], in[0].dtype, in[4].shape);
  });
}

/* Both ops, per chunk of rows: the rank's logits z [c, Vr] (a GEMM, then the bias).
   Forward: each row's logsumexp (rowLse, the fused loss's), its target's logit when the
   target is one of the rank's classes, its max and the first class holding it (as
   lm.accuracy's argmax). Backward (lse, dlse, dtarget given): dz = dlse exp(z - lse) +
   dtarget onehot in place, then dh_c = dz w and dw += dz^T h_c, as the fused loss's, and
   dbias += the column sums of dz, in row order. */
template <typename T> LMRT_SIMD_CLONES void linearCrossEntropyStatsT(const KernelCall &call, const char *op) {
  singleThreadedBlas();
  const bool withGrad = call.in.size() == 8;
  const T *h = call.in[0].as<T>(), *w = call.in[1].as<T>();
  const int32_t *tg = call.in[2].as<int32_t>();
  const bool tb = call.attrs.getBool("transpose_rhs");
  const Shape &hs = call.in[0].shape();
  const int64_t d = hs.back(), rows = call.in[2].numel();
  const int64_t v = tb ? call.in[1].shape()[0] : call.in[1].shape()[1];
  const T firstValue = call.in[3].as<T>()[0];
  const int64_t first = (int64_t)std::llround((double)firstValue);
  if ((T)first != firstValue || first < 0)
    fail("%s: first %g must be a whole number >= 0 (the rank's first class)", op, (double)firstValue);
  const int64_t vocab = call.attrs.getInt("vocab");
  validateTargets(op, tg, rows, vocab, call.attrs.getInt("ignore_index"));
  const int64_t chunk = linearCrossEntropyEffectiveChunk(call.attrs.getInt("chunk_rows"), rows);
  const T *bias = call.in[4].as<T>();
  const T *lseIn = withGrad ? call.in[5].as<T>() : nullptr;
  const T *dlse = withGrad ? call.in[6].as<T>() : nullptr, *dtg = withGrad ? call.in[7].as<T>() : nullptr;
  T *lseOut = withGrad ? nullptr : call.out[0].as<T>(), *tlOut = withGrad ? nullptr : call.out[1].as<T>();
  T *maxOut = withGrad ? nullptr : call.out[2].as<T>(), *argOut = withGrad ? nullptr : call.out[3].as<T>();
  T *dh = withGrad ? call.out[0].as<T>() : nullptr, *dw = withGrad ? call.out[1].as<T>() : nullptr;
  T *db = withGrad ? call.out[2].as<T>() : nullptr;
  if (withGrad)
    for (int64_t j = 0; j < v; ++j) db[j] = 0;

  thread_local std::vector<T> scratch;  // one chunk of the rank's logits, then of their gradient
  scratch.resize((size_t)(chunk * v));
  T *x = scratch.data();
  if (withGrad && rows == 0)
    for (int64_t i = 0; i < v * d; ++i) dw[i] = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t c = std::min(chunk, rows - r0);
    const T *hc = h + r0 * d;
    gemmSplit<T, T>(false, tb, c, v, d, hc, d, w, tb ? d : v, (T)0, x, v);
#pragma omp parallel for schedule(static) if (c * v >= kParallelMin)
    for (int64_t i = 0; i < c; ++i) {
      T *xi = x + i * v;
#pragma omp simd
      for (int64_t j = 0; j < v; ++j) xi[j] += bias[j];
      const int64_t local = (int64_t)tg[r0 + i] - first;
      const bool mine = local >= 0 && local < v;
      if (!withGrad) {
        T mx, lse;
        rowLse(xi, v, mx, lse);
        lseOut[r0 + i] = mx + lse;
        tlOut[r0 + i] = mine ? xi[local] : (T)0;
        // lm.accuracy's prediction over the rank's classes: the first class holding the
        // largest logit that is not NaN (a NaN is never predicted, nor correct); a row of
        // NaNs gives max -inf and class `vocab`, which no target is (so the all-gathered
        // argmax never picks it over a real class, and the row is wrong).
        T top = -std::numeric_limits<T>::infinity();
        int64_t best = -1;
        for (int64_t j = 0; j < v; ++j)
          if (xi[j] > top || (best < 0 && xi[j] == top)) top = xi[j], best = j;
        maxOut[r0 + i] = top;
        argOut[r0 + i] = best < 0 ? (T)vocab : (T)(first + best);
        continue;
      }
      const T l = lseIn[r0 + i], g = dlse[r0 + i];
#pragma omp simd
      for (int64_t j = 0; j < v; ++j) xi[j] = g * expT(xi[j] - l);
      if (mine) xi[local] += dtg[r0 + i];
    }
    if (!withGrad) continue;
    chunkBackwardGemms<T, T>(tb, c, d, v, x, v, w, hc, r0 == 0, dh + r0 * d, dw);
    for (int64_t i = 0; i < c; ++i) {
      const T *dzi = x + i * v;
#pragma omp simd
      for (int64_t j = 0; j < v; ++j) db[j] += dzi[j];
    }
  }
}

void runLinearCrossEntropyStats(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype,
                [&](auto t) { linearCrossEntropyStatsT<decltype(t)>(call, "linear_cross_entropy_stats"); });
}

void runLinearCrossEntropyStatsGrad(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype,
                [&](auto t) { linearCrossEntropyStatsT<decltype(t)>(call, "linear_cross_entropy_stats_grad"); });
}

}  // namespace

void addLinearCrossEntropyKernels(std::vector<KernelDef> &k) {
  k.push_back({"linear_cross_entropy", 3, 1, checkLinearCrossEntropy, runLinearCrossEntropy});
  k.push_back({"linear_cross_entropy_with_grad", 4, 3, checkLinearCrossEntropyWithGrad,
               runLinearCrossEntropyWithGrad});
  k.push_back({"linear_cross_entropy_stats", 5, 4, checkLinearCrossEntropyStats, runLinearCrossEntropyStats});
  k.push_back({"linear_cross_entropy_stats_grad", 8, 3, checkLinearCrossEntropyStatsGrad,
               runLinearCrossEntropyStatsGrad});
}

}  // namespace lmrt::kernels::detail

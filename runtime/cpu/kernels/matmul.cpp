/* Implements: lm.matmul, batched matrix multiply (f32 on oneDNN sgemm, f64 on OpenBLAS dgemm,
   bf16 operands into an f32 product on oneDNN's bf16 matmul, f16 widened onto sgemm: blas.h).
   A rank-2 rhs shared by every batch element turns the whole op into one GEMM
   (lhs flattened to [batch*M, K]) unless lhs is transposed; otherwise one GEMM
   per batch element.
   Threading: all runtime parallelism belongs to OpenMP. OpenBLAS is told to run
   single-threaded and the kernel splits the work (batch elements x blocks of the
   longer output side) across OpenMP threads itself: two thread pools that both
   spin-wait would fight over the cores (on 2 cores a step ran several times slower),
   and OpenBLAS's own 2-thread split measured no faster than this one on the GPT-2
   shapes. */
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "runtime/cpu/kernels/blas.h"
#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/parallel_errors.h"
#include "contract/matmul_dims.h"

namespace lmrt::kernels::detail {
namespace {

std::string checkMatmul(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &attrs) {
  return guardCheck("matmul", in, out, 2, 1, [&]() -> std::string {
    // bf16 or f16 operands accumulate into an f32 product (-lm-mixed-precision).
    const bool reduced = in[0].dtype == DType::BF16 || in[0].dtype == DType::F16;
    if (!reduced) LMRT_CHECK(expectFloat("matmul", "lhs", in[0]));
    LMRT_CHECK(expectSameDType("matmul", "rhs", in[1], "lhs", in[0]));
    std::string err;
    auto shape = shapes::matmul(in[0].shape, in[1].shape, attrs.getBool("transpose_lhs"),
                                attrs.getBool("transpose_rhs"), err);
    if (!shape) return err;
    return expectType("matmul", "out", out[0], reduced ? DType::F32 : in[0].dtype, *shape);
  });
}

/* Below this many multiply-adds a GEMM runs on one thread. */
constexpr int64_t kParallelFlops = 1 << 18;

/* c = op(a) op(b) for `batch` GEMMs of [m, k] x [k, n] (b shared when sharedRhs),
   spread over the OpenMP threads. Work items: (batch element, block of output rows
   or columns), enough that every thread gets work even when the batch is smaller
   than the thread count. A block re-packs the whole operand it does not split, so
   the longer side of the output is split: the logits GEMM ([B*T, d] x [d, 50257])
   split by rows had each thread pack all of wte. Every output element is one dot
   product over the full K in BLAS's own order, so the bits do not depend on the
   split or the thread count. After each block, the same thread calls
   after(bi, r0, r1, c0, c1) on it, while it is in cache (a generated epilogue). */
template <typename T, typename C = T>
void gemmBlocks(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k, const T *a, const T *b,
                bool sharedRhs, C *c, const BlockFn &after) {
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  // Inside a parallel region (a matmul pair, registry.h) the calling thread runs it all.
  int nt = batch * m * n * k >= kParallelFlops && !omp_in_parallel() ? omp_get_max_threads() : 1;
  const bool byCols = std::is_same_v<T, lmc::bf16> ? !bf16RowBlocks(ta, m, n) : n > m;
  const int64_t side = byCols ? n : m;
  // Blocks of whole 16-column panels, or of at least kMinRows rows (the last takes the
  // remainder): oneDNN computes a GEMM of fewer rows another way, and its bits would
  // then depend on the thread count.
  constexpr int64_t kMinRows = 16;
  int64_t blocks = batch >= nt ? 1 : std::min<int64_t>(byCols ? side : side / kMinRows, (nt + batch - 1) / batch);
  blocks = std::max<int64_t>(blocks, 1);
  int64_t per = byCols ? (side + blocks - 1) / blocks : side / blocks;
  if (byCols && blocks > 1) per = std::min(side, (per + 15) / 16 * 16);
  if constexpr (std::is_same_v<T, lmc::bf16>) {
    // Blocks fixed by the shape alone (blas.h), the last row block taking the remainder.
    per = bf16GemmBlock(side);
    blocks = (side + per - 1) / per;
    if (!byCols && blocks > 1 && side % per != 0) --blocks;  // the last block takes the remainder
  }
  ParallelErrors errors;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
  for (int64_t item = 0; item < batch * blocks; ++item) errors.run([&] {
    int64_t bi = item / blocks, i0 = (item % blocks) * per;
    int64_t i1 = !byCols && item % blocks == blocks - 1 ? side : std::min(side, i0 + per);
    if (i0 >= i1) return;
    const T *ab = a + bi * m * k, *bb = sharedRhs ? b : b + bi * k * n;
    C *cb = c + bi * m * n;
    if (k == 0) {  // BLAS rejects lda = 0; the empty sum is zero.
      for (int64_t r = byCols ? 0 : i0; r < (byCols ? m : i1); ++r)
        std::memset(cb + r * n + (byCols ? i0 : 0), 0, sizeof(C) * (byCols ? i1 - i0 : n));
    } else if (byCols) {  // columns j of op(B) start at column j of B, or at row j when B is stored transposed
      gemm(ta, tb, m, i1 - i0, k, (C)1, ab, lda, bb + (tb ? i0 * ldb : i0), ldb, (C)0, cb + i0, n);
    } else {  // rows r of op(A) start at row r of A, or at column r when A is stored transposed
      gemm(ta, tb, i1 - i0, n, k, (C)1, ab + (ta ? i0 : i0 * lda), lda, bb, ldb, (C)0, cb + i0 * n, n);
    }
    if (after) {
      if (byCols)
        after(bi, 0, m, i0, i1);
      else
        after(bi, i0, i1, 0, n);
    }
  });
  errors.rethrow();
}

/* The tall weight-gradient form (matmul_dims.h): C^T [n, m] = B^T A into the calling
   thread's scratch, then transposed into C, 32 x 32 tiles. Each element is still one dot
   product over the whole K, so the bits do not depend on the thread count. */
template <typename T, typename C>
void matmulTallTransposedLhs(int64_t m, int64_t n, int64_t k, const T *a, const T *b, C *c) {
  thread_local std::vector<C> ct;
  ct.resize((size_t)(m * n));
  gemmBlocks<T, C>(true, false, 1, n, m, k, b, a, true, ct.data(), nullptr);  // C^T [n, m] = B^T A
  constexpr int64_t kTile = 32;
  const int64_t tiles = (m + kTile - 1) / kTile;
  const C *src = ct.data();
#pragma omp parallel for schedule(static) if (m * n >= kParallelMin)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t i0 = t * kTile, i1 = std::min(m, i0 + kTile);
    for (int64_t j0 = 0; j0 < n; j0 += kTile) {
      const int64_t j1 = std::min(n, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) c[i * n + j] = src[j * m + i];
    }
  }
}

template <typename T, typename C = T> void matmulT(const KernelCall &call) {
  singleThreadedBlas();
  const Shape &ls = call.in[0].shape(), &rs = call.in[1].shape();
  bool ta = call.attrs.getBool("transpose_lhs"), tb = call.attrs.getBool("transpose_rhs");
  auto [batch, m, n, k] = matmulDims(ls, rs, ta, tb);
  const T *a = call.in[0].as<T>(), *b = call.in[1].as<T>();
  C *c = call.out[0].as<C>();
  if (batch * m * n == 0) return;
  if (tallTransposedLhs(ta, tb, batch, m, n, k)) {
    matmulTallTransposedLhs<T, C>(m, n, k, a, b, c);
    return;
  }
  bool sharedRhs = rs.size() == 2;
  if (sharedRhs && !ta) {  // one [batch*M, K] x [K, N] GEMM
    m *= batch;
    batch = 1;
  }
  gemmBlocks<T, C>(ta, tb, batch, m, n, k, a, b, sharedRhs, c, nullptr);
}

void runMatmul(const KernelCall &call) {
  if (call.in[0].type.dtype == DType::BF16) return matmulT<lmc::bf16, float>(call);
  if (call.in[0].type.dtype == DType::F16) return matmulT<lmc::f16, float>(call);
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { matmulT<decltype(t)>(call); });
}

}  // namespace

void gemmWithEpilogue(const TensorRef &a, const TensorRef &b, bool transposeB, const TensorRef &c, int64_t rows,
                      int64_t k, int64_t n, const BlockFn &after) {
  singleThreadedBlas();
  if (rows * n == 0) return;
  if (a.type.dtype == DType::BF16)
    return gemmBlocks<lmc::bf16, float>(false, transposeB, 1, rows, n, k, a.as<lmc::bf16>(), b.as<lmc::bf16>(), true,
                                        c.as<float>(), after);
  if (a.type.dtype == DType::F16)
    return gemmBlocks<lmc::f16, float>(false, transposeB, 1, rows, n, k, a.as<lmc::f16>(), b.as<lmc::f16>(), true,
                                       c.as<float>(), after);
  dispatchFloat(a.type.dtype, [&](auto t) {
    using T = decltype(t);
    gemmBlocks<T>(false, transposeB, 1, rows, n, k, a.as<T>(), b.as<T>(), true, c.as<T>(), after);
  });
}

void addMatmulKernels(std::vector<KernelDef> &k) { k.push_back({"matmul", 2, 1, checkMatmul, runMatmul}); }

}  // namespace lmrt::kernels::detail

namespace lmrt::kernels {

bool runMatmulPair(const KernelCall &a, const KernelCall &b, int &failed) {
  return runAsPair([&] { detail::runMatmul(a); }, [&] { detail::runMatmul(b); }, &failed);
}

}  // namespace lmrt::kernels

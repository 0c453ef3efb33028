/* Implements: lm.matmul, batched matrix multiply on CBLAS (sgemm/dgemm).
   A rank-2 rhs shared by every batch element turns the whole op into one GEMM
   (lhs flattened to [batch*M, K]) unless lhs is transposed; otherwise one GEMM
   per batch element. OpenBLAS parallelises each GEMM itself. */
#include <cblas.h>

#include "runtime/kernels/kernel_common.h"

namespace lmrt::kernels::detail {
namespace {

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
          int64_t ldb, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
              1.0f, a, (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double *a, int64_t lda, const double *b,
          int64_t ldb, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
              1.0, a, (int)lda, b, (int)ldb, 0.0, c, (int)ldc);
}

std::string checkMatmul(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &attrs) {
  return guardCheck("matmul", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("matmul", "lhs", in[0]));
    LMRT_CHECK(expectSameDType("matmul", "rhs", in[1], "lhs", in[0]));
    std::string err;
    auto shape = shapes::matmul(in[0].shape, in[1].shape, attrs.getBool("transpose_lhs", false),
                                attrs.getBool("transpose_rhs", false), err);
    if (!shape) return err;
    return expectType("matmul", "out", out[0], in[0].dtype, *shape);
  });
}

template <typename T> void matmulT(const KernelCall &call) {
  const Shape &ls = call.in[0].shape(), &rs = call.in[1].shape();
  bool ta = call.attrs.getBool("transpose_lhs", false), tb = call.attrs.getBool("transpose_rhs", false);
  size_t r = ls.size();
  int64_t m = ta ? ls[r - 1] : ls[r - 2], k = ta ? ls[r - 2] : ls[r - 1];
  int64_t n = tb ? rs[rs.size() - 2] : rs[rs.size() - 1];
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < r; ++i) batch *= ls[i];
  const T *a = call.in[0].as<T>(), *b = call.in[1].as<T>();
  T *c = call.out[0].as<T>();
  if (batch * m * n == 0) return;
  if (k == 0) {  // BLAS rejects lda = 0; the empty sum is zero.
    std::memset(c, 0, sizeof(T) * batch * m * n);
    return;
  }
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  bool sharedRhs = rs.size() == 2;
  if (sharedRhs && !ta) {
    gemm(false, tb, batch * m, n, k, a, lda, b, ldb, c, n);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    gemm(ta, tb, m, n, k, a + i * m * k, lda, sharedRhs ? b : b + i * k * n, ldb, c + i * m * n, n);
}

void runMatmul(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { matmulT<decltype(t)>(call); });
}

}  // namespace

void addMatmulKernels(std::vector<KernelDef> &k) { k.push_back({"matmul", 2, 1, checkMatmul, runMatmul}); }

}  // namespace lmrt::kernels::detail

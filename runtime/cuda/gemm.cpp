/* Implements: Gemm (gemm.h) on cuBLASLt. */
#include "runtime/cuda/gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/check.h"

namespace lmrt::cuda {
namespace {

/* cuBLASLt's recommended workspace for Hopper; also ample for Ampere. */
constexpr size_t kWorkspaceBytes = 32u << 20;

int alignmentOf(const void *p) {
  uintptr_t u = reinterpret_cast<uintptr_t>(p);
  int a = 256;
  while (a > 1 && u % a) a /= 2;
  return a;
}

cublasLtEpilogue_t ltEpilogue(Epilogue e) {
  switch (e) {
  case Epilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
  case Epilogue::GeluBias: return CUBLASLT_EPILOGUE_GELU_BIAS;
  // In column-major terms the rhs B is cuBLASLt's matrix A (see gemm.h).
  case Epilogue::BiasGrad: return CUBLASLT_EPILOGUE_BGRADA;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

cublasLtMatrixLayout_t layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                              int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, t, (uint64_t)rows, (uint64_t)cols, ld));
  if (batch > 1) {
    int32_t count = (int32_t)batch;
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return l;
}

}  // namespace

struct Gemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our B), B (our A), C = D
  cublasLtMatmulAlgo_t algo;
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

Gemm::Gemm(cudaStream_t stream, bool tf32)
    : stream_(stream), tf32_(tf32), workspace_(kWorkspaceBytes, "the cuBLASLt workspace") {
  cublasLtHandle_t h = nullptr;
  CUBLAS_CHECK(cublasLtCreate(&h));
  handle_ = h;
}

Gemm::~Gemm() {
  plans_.clear();
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

Gemm::Plan &Gemm::plan(const GemmArgs &g, int align) {
  Key key{(int)g.dtype, g.ta, g.tb, g.m, g.n, g.k, g.batch, g.lda, g.strideA, g.ldb, g.strideB, g.ldc, g.strideC,
          (int64_t)tf32_, (int)g.epilogue, align};
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  auto p = std::make_unique<Plan>();
  const bool f64 = g.dtype == DType::F64;
  const cudaDataType_t t = f64 ? CUDA_R_64F : CUDA_R_32F;
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F : (tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, compute, t));
  // Column-major: D^T[n, m] = opA'(our B) opB'(our A).
  cublasOperation_t opA = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opB = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
  cublasLtEpilogue_t ep = ltEpilogue(g.epilogue);
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
  p->a = g.tb ? layout(t, g.k, g.n, g.ldb, g.batch, g.strideB) : layout(t, g.n, g.k, g.ldb, g.batch, g.strideB);
  p->b = g.ta ? layout(t, g.m, g.k, g.lda, g.batch, g.strideA) : layout(t, g.k, g.m, g.lda, g.batch, g.strideA);
  p->c = layout(t, g.n, g.m, g.ldc, g.batch, g.strideC);

  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = workspace_.size();
  uint32_t alignBytes = (uint32_t)align;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceSetAttribute(pref, attr, &alignBytes, sizeof alignBytes);
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(handle_), p->desc, p->a, p->b, p->c, p->c,
                                        pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  CUBLAS_CHECK(st);
  if (found == 0)
    fail("cuBLASLt has no algorithm for a %s GEMM [%lld x %lld] x [%lld x %lld]%s (batch %lld, epilogue %d)",
         f64 ? "f64" : "f32", (long long)g.m, (long long)g.k, (long long)g.k, (long long)g.n,
         g.ta || g.tb ? " with transposes" : "", (long long)g.batch, (int)g.epilogue);
  p->algo = result.algo;
  return *plans_.emplace(key, std::move(p)).first->second;
}

void Gemm::run(const GemmArgs &g) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const size_t elem = dtypeSize(g.dtype);
  if (g.k == 0) {  // the empty sum: cuBLASLt rejects k = 0
    if (g.accumulate) return;
    for (int64_t bi = 0; bi < g.batch; ++bi)
      CUDA_CHECK(cudaMemset2DAsync(static_cast<char *>(g.c) + bi * g.strideC * elem, g.ldc * elem, 0, g.n * elem,
                                   g.m, stream_));
    if (g.epilogue == Epilogue::BiasGrad) CUDA_CHECK(cudaMemsetAsync(g.biasGrad, 0, g.n * elem, stream_));
    return;
  }
  int align = std::min({alignmentOf(g.a), alignmentOf(g.b), alignmentOf(g.c)});
  if (g.bias) align = std::min(align, alignmentOf(g.bias));
  if (g.biasGrad) align = std::min(align, alignmentOf(g.biasGrad));
  Plan &p = plan(g, align);
  if (g.epilogue == Epilogue::Bias || g.epilogue == Epilogue::GeluBias)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias));
  if (g.epilogue == Epilogue::BiasGrad)
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.biasGrad, sizeof g.biasGrad));
  const float alpha32 = 1, beta32 = g.accumulate ? 1 : 0;
  const double alpha64 = 1, beta64 = g.accumulate ? 1 : 0;
  const bool f64 = g.dtype == DType::F64;
  const void *alpha = f64 ? (const void *)&alpha64 : (const void *)&alpha32;
  const void *beta = f64 ? (const void *)&beta64 : (const void *)&beta32;
  CUBLAS_CHECK(cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), p.desc, alpha, g.b, p.a, g.a, p.b, beta, g.c,
                              p.c, g.c, p.c, &p.algo, workspace_.get(), workspace_.size(), stream_));
}

}  // namespace lmrt::cuda

/* Implements: Gemm (gemm.h) on cuBLASLt. */
#include "runtime/cuda/gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/check.h"
#include "runtime/cuda/gemm_desc.h"

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

cublasLtMatrixLayout_t makeLayout(const GemmLayout &g) {
  cublasLtMatrixLayout_t l = nullptr;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, g.type, g.rows, g.cols, g.ld));
  if (g.batch > 1) {
    int32_t count = (int32_t)g.batch;
    int64_t stride = g.stride;
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
  const GemmDesc d = describeGemm(g, tf32_);
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, d.compute, d.scale));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &d.opA, sizeof d.opA));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &d.opB, sizeof d.opB));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &d.epilogue, sizeof d.epilogue));
  p->a = makeLayout(d.a);
  p->b = makeLayout(d.b);
  p->c = makeLayout(d.c);

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
         dtypeName(g.dtype), (long long)g.m, (long long)g.k, (long long)g.k, (long long)g.n,
         g.ta || g.tb ? " with transposes" : "", (long long)g.batch, (int)g.epilogue);
  p->algo = result.algo;
  return *plans_.emplace(key, std::move(p)).first->second;
}

void Gemm::run(const GemmArgs &g) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const size_t elem = dtypeSize(gemmResultType(g.dtype));  // of C: f32 for bf16 and f16 operands
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
  const bool f64 = g.dtype == DType::F64;  // bf16 and f16 GEMMs scale in f32 (gemm_desc.h)
  const void *alpha = f64 ? (const void *)&alpha64 : (const void *)&alpha32;
  const void *beta = f64 ? (const void *)&beta64 : (const void *)&beta32;
  CUBLAS_CHECK(cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), p.desc, alpha, g.b, p.a, g.a, p.b, beta, g.c,
                              p.c, g.c, p.c, &p.algo, workspace_.get(), workspace_.size(), stream_));
}

}  // namespace lmrt::cuda

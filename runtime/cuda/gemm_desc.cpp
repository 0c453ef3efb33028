/* Implements: describeGemm (gemm_desc.h). */
#include "runtime/cuda/gemm_desc.h"

namespace lmrt::cuda {
namespace {

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

cudaDataType_t cudaType(DType t) {
  switch (t) {
  case DType::F32: return CUDA_R_32F;
  case DType::F64: return CUDA_R_64F;
  case DType::BF16: return CUDA_R_16BF;
  case DType::F16: return CUDA_R_16F;
  default: fail("a GEMM on %s operands: cuBLASLt runs f32, f64, bf16 and f16 here", dtypeName(t));
  }
}

GemmLayout layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  return GemmLayout{t, (uint64_t)rows, (uint64_t)cols, ld, batch, stride};
}

}  // namespace

DType gemmResultType(DType operands) {
  return operands == DType::BF16 || operands == DType::F16 ? DType::F32 : operands;
}

void checkGemmTypes(const char *op, DType lhs, DType rhs, DType result) {
  if (lhs != rhs || result != gemmResultType(lhs))
    fail("%s: a GEMM of %s x %s into %s; the CUDA GEMMs take two operands of one type and write f32 for bf16 and "
         "f16 operands, else the operands' type", op, dtypeName(lhs), dtypeName(rhs), dtypeName(result));
}

GemmDesc describeGemm(const GemmArgs &g, bool tf32) {
  const cudaDataType_t ab = cudaType(g.dtype), c = cudaType(gemmResultType(g.dtype));
  const bool reduced = g.dtype == DType::BF16 || g.dtype == DType::F16;
  if (reduced && g.epilogue != Epilogue::None)
    fail("a %s GEMM with a cuBLASLt epilogue (%d): reduced-precision GEMMs run without one (the plans' epilogues "
         "are generated kernels)", dtypeName(g.dtype), (int)g.epilogue);
  GemmDesc d;
  d.compute = g.dtype == DType::F64 ? CUBLAS_COMPUTE_64F
              : tf32 && g.dtype == DType::F32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                              : CUBLAS_COMPUTE_32F;
  d.scale = g.dtype == DType::F64 ? CUDA_R_64F : CUDA_R_32F;
  // Column-major: D^T[n, m] = opA'(our B) opB'(our A).
  d.opA = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  d.opB = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  d.epilogue = ltEpilogue(g.epilogue);
  d.a = g.tb ? layout(ab, g.k, g.n, g.ldb, g.batch, g.strideB) : layout(ab, g.n, g.k, g.ldb, g.batch, g.strideB);
  d.b = g.ta ? layout(ab, g.m, g.k, g.lda, g.batch, g.strideA) : layout(ab, g.k, g.m, g.lda, g.batch, g.strideA);
  d.c = layout(c, g.n, g.m, g.ldc, g.batch, g.strideC);
  return d;
}

}  // namespace lmrt::cuda

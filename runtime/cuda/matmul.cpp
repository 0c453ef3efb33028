/* Implements: lm.matmul on the GPU: one cuBLASLt GEMM (gemm.h) per step. A
   rank-2 rhs shared by every batch element makes the whole op one GEMM over
   the flattened rows (unless lhs is transposed); otherwise one strided-batched
   GEMM, the rhs stride 0 when it is shared. bf16 and f16 operands (both, as
   -lm-mixed-precision casts them) accumulate in fp32 into an f32 result. */
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/gemm_desc.h"
#include "runtime/cuda/ops.h"
#include "contract/matmul_dims.h"

namespace lmrt::cuda::detail {
namespace {

void runMatmul(const OpCall &call) {
  const Shape &ls = call.in[0].shape(), &rs = call.in[1].shape();
  GemmArgs g;
  g.dtype = call.in[0].type.dtype;
  checkGemmTypes("matmul", call.in[0].type.dtype, call.in[1].type.dtype, call.out[0].type.dtype);
  g.ta = call.attrs.getBool("transpose_lhs");
  g.tb = call.attrs.getBool("transpose_rhs");
  const kernels::MatmulDims d = kernels::matmulDims(ls, rs, g.ta, g.tb);
  g.batch = d.batch, g.m = d.m, g.n = d.n, g.k = d.k;
  const bool sharedRhs = rs.size() == 2;
  g.lda = g.ta ? g.m : g.k;
  g.ldb = g.tb ? g.k : g.n;
  g.ldc = g.n;
  g.strideA = g.m * g.k;
  g.strideB = sharedRhs ? 0 : g.k * g.n;
  g.strideC = g.m * g.n;
  if (sharedRhs && !g.ta) {  // one [batch*M, K] x [K, N] GEMM
    g.m *= g.batch;
    g.batch = 1;
  }
  g.a = call.in[0].data;
  g.b = call.in[1].data;
  g.c = call.out[0].data;
  call.gemm.run(g);
}

}  // namespace

void addMatmulKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"matmul", runMatmul, noScratch, /*reducedPrecision=*/true});
}

}  // namespace lmrt::cuda::detail

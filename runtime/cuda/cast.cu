/* Implements: lm.cast on the GPU, f32 to bf16 or f16 and back, with
   contract/scalar_math.h's conversions (CUDA's own round-to-nearest-even
   intrinsics there), as the CPU kernel. Plans fuse nearly every cast into its
   producer's generated kernel (docs/mixed-precision.md); this kernel runs the
   rest. */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

template <typename From, typename To> __global__ void castKernel(const From *x, To *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = lmc::store<To>(lmc::load(x[i]));
}

template <typename From, typename To> void launch(const OpCall &call, int64_t n) {
  castKernel<From, To><<<gridFor(n), kThreads, 0, call.stream>>>(call.in[0].as<From>(), call.out[0].as<To>(), n);
  CUDA_CHECK_LAUNCH();
}

void runCast(const OpCall &call) {
  const int64_t n = call.in[0].numel();
  if (n == 0) return;
  DType from = call.in[0].type.dtype, to = call.out[0].type.dtype;
  if (to == DType::BF16) return launch<float, lmc::bf16>(call, n);
  if (to == DType::F16) return launch<float, lmc::f16>(call, n);
  if (from == DType::BF16) return launch<lmc::bf16, float>(call, n);
  if (from == DType::F16) return launch<lmc::f16, float>(call, n);
  fail("cast: no CUDA conversion from %s to %s", dtypeName(from), dtypeName(to));
}

}  // namespace

void addCastKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"cast", runCast, noScratch, /*reducedPrecision=*/true});
}

}  // namespace lmrt::cuda::detail

/* Implements: lm.cast, f32 to bf16 or f16 (round to nearest even, NaN kept) and
   back (exact), with contract/scalar_math.h's conversions: the ones generated
   kernels use, so a fused cast and this one store the same bits. A plan runs
   this kernel only for a cast no generated kernel absorbed (-lm-fuse). */
#include <omp.h>

#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

bool reduced(DType t) { return t == DType::BF16 || t == DType::F16; }

std::string checkCast(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("cast", in, out, 1, 1, [&]() -> std::string {
    DType from = in[0].dtype, to = out[0].dtype;
    if (!((from == DType::F32 && reduced(to)) || (reduced(from) && to == DType::F32)))
      return std::string("cast: converts between f32 and bf16 or f16, not ") + dtypeName(from) + " to " +
             dtypeName(to);
    return expectType("cast", "result", out[0], to, in[0].shape);
  });
}

/* One thread's elements, in a function of its own with SIMD clones: the body of an
   OpenMP parallel loop is outlined and compiled for baseline x86-64 whatever the
   enclosing function's clones (gpt2_b4t64's 49 parameter casts took about 30 % longer
   so). Each element is converted on its own: the split changes no bit. */
template <typename From, typename To> LMRT_SIMD_CLONES void convertRange(const From *x, To *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = lmc::store<To>(lmc::load(x[i]));
}

template <typename From, typename To> void convert(const KernelCall &call) {
  const From *x = call.in[0].as<From>();
  To *y = call.out[0].as<To>();
  const int64_t n = call.in[0].numel();
#pragma omp parallel if (n >= kParallelMin)
  {
    const int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
    const int64_t begin = n * t / threads, end = n * (t + 1) / threads;
    convertRange(x + begin, y + begin, end - begin);
  }
}

void runCast(const KernelCall &call) {
  DType from = call.in[0].type.dtype, to = call.out[0].type.dtype;
  if (to == DType::BF16) return convert<float, lmc::bf16>(call);
  if (to == DType::F16) return convert<float, lmc::f16>(call);
  if (from == DType::BF16) return convert<lmc::bf16, float>(call);
  return convert<lmc::f16, float>(call);
}

}  // namespace

void addCastKernels(std::vector<KernelDef> &k) { k.push_back({"cast", 1, 1, checkCast, runCast}); }

}  // namespace lmrt::kernels::detail

/* Implements: the kernel of every op of the elementwise table on the GPU
   (contract/elementwise.h: the arithmetic, the comparisons and lm.where, neg,
   the GELU pair and their adjoints, the zoo's unary math), instantiated from
   each op's scalar form (contract/elementwise_forms.h, generated from the ODS),
   which the CPU kernels and the generated kernels compute too. One grid-stride
   loop over the operands when they all have the result's size, else one that
   reaches each operand through its broadcast strides (StridedIndex). */
#include <utility>

#include "contract/elementwise_forms.h"
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

namespace forms = elementwise::forms;

/* An op's operand pointers, passed to the kernel by value. */
template <typename T, size_t N> struct Operands {
  const T *p[N];
};

template <typename Fn, typename T, size_t... I>
__global__ void flatKernel(Operands<T, sizeof...(I)> in, T *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = Fn::f(in.p[I][i]...);
}

template <typename Fn, typename T, size_t... I>
__global__ void stridedKernel(Operands<T, sizeof...(I)> in, T *y, int64_t n, StridedIndex ix) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[sizeof...(I)];
    ix.offsets(i, off, sizeof...(I));
    y[i] = Fn::f(in.p[I][off[I]]...);
  }
}

template <typename Fn, size_t... I> void runElementwise(const OpCall &call, std::index_sequence<I...>) {
  constexpr size_t N = sizeof...(I);
  static_assert(N <= sizeof(StridedIndex::offset) / sizeof(int64_t), "StridedIndex indexes at most three operands");
  const DevTensor &o = call.out[0];
  const int64_t n = o.numel();
  if (n == 0) return;
  const bool flat = ((call.in[I].numel() == n) && ...);
  StridedIndex ix;
  if (!flat) {
    checkRank("broadcast", o.shape());
    ix.rank = (int)o.shape().size();
    for (int d = 0; d < ix.rank; ++d) ix.shape[d] = o.shape()[d];
    (broadcastStrides(call.in[I].shape(), o.shape(), ix.stride[I]), ...);
  }
  byFloat(o.type.dtype, [&](auto t) {
    using T = decltype(t);
    Operands<T, N> in{{call.in[I].as<T>()...}};
    if (flat)
      flatKernel<Fn, T, I...><<<gridFor(n), kThreads, 0, call.stream>>>(in, o.as<T>(), n);
    else
      stridedKernel<Fn, T, I...><<<gridFor(n), kThreads, 0, call.stream>>>(in, o.as<T>(), n, ix);
    CUDA_CHECK_LAUNCH();
  });
}

template <typename Fn> void run(const OpCall &call) { runElementwise<Fn>(call, std::make_index_sequence<Fn::arity>()); }

/* One kernel per functor of the table. */
template <typename... Fn> void addTableKernels(std::vector<CudaKernelDef> &k, forms::List<Fn...>) {
  (k.push_back({Fn::name, run<Fn>, noScratch}), ...);
}

}  // namespace

void addMathKernels(std::vector<CudaKernelDef> &k) { addTableKernels(k, forms::All{}); }

}  // namespace lmrt::cuda::detail

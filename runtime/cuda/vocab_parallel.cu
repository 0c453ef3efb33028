/* Implements: lm.linear_cross_entropy_stats and lm.linear_cross_entropy_stats_grad on the
   GPU, the vocabulary-parallel loss's rank part (docs/distributed.md, "The vocabulary"),
   as the fused linear_cross_entropy runs (softmax.cu): per chunk of rows, the rank's
   logits z [c, Vr] = h_c w^T (w [Vr, D], transpose_rhs) or h_c w (w [D, Vr]) by cuBLASLt
   into the step's scratch, then the row kernels of vocab_parallel_kernels.cuh; the
   gradient then runs dh_c = dz w and dw += dz^T h_c (cuBLASLt, accumulating from the
   second chunk). The chunk is the GPU's (linearCrossEntropyCudaChunkRows, the fused
   loss's rule, with the rank's Vr classes); contract.cpp's lossScratch predicts the
   scratch, [chunk, Vr] of h's type. f32 and f64, as the CPU kernel
   (-lm-mixed-precision leaves these GEMMs in f32).
   Operands: h, w, targets, first (+ lse, dlse, dtarget for the gradient). An operand
   added later (a bias split with the classes) goes after `first` in both ops, read by
   the row kernels (z + bias before the max), its gradient the column sums of dz. */
#include "contract/linear_cross_entropy.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernels.cuh"
#include "runtime/cuda/vocab_parallel_kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

struct StatsShape {
  bool tb;
  int64_t rows, v, d, chunk;
};

StatsShape statsShape(const std::vector<TensorType> &in, const kernels::Attrs &attrs) {
  StatsShape s;
  s.tb = attrs.getBool("transpose_rhs");
  s.rows = in[2].numel();
  s.v = s.tb ? in[1].shape[0] : in[1].shape[1];
  s.d = s.tb ? in[1].shape[1] : in[1].shape[0];
  s.chunk = kernels::linearCrossEntropyCudaChunkRows(attrs.getInt("chunk_rows"), s.rows, s.v, s.d);
  return s;
}

size_t statsScratch(const std::vector<TensorType> &in, const std::vector<TensorType> &, const kernels::Attrs &attrs) {
  const StatsShape s = statsShape(in, attrs);
  return ((size_t)(s.chunk * s.v) * dtypeSize(in[0].dtype) + 255) / 256 * 256;
}

/* A launcher for the row kernels on the call's stream. */
struct StreamLaunch {
  cudaStream_t stream;
  template <typename K, typename... A> void operator()(K kernel, unsigned blocks, int threads, A... args) const {
    kernel<<<blocks, threads, 0, stream>>>(args...);
    CUDA_CHECK_LAUNCH();
  }
};

void runStats(const OpCall &call, bool withGrad) {
  std::vector<TensorType> types;
  for (const DevTensor &t : call.in) types.push_back(t.type);
  const StatsShape sh = statsShape(types, call.attrs);
  const DType dtype = call.in[0].type.dtype;
  byFloat(dtype, [&](auto t) {
    using T = decltype(t);
    vocab::StatsCall<T> s{call.in[0].as<T>(), call.in[1].as<T>(), call.in[3].as<T>(), call.in[2].as<int32_t>(),
                          sh.tb, sh.rows, sh.v, sh.d, sh.chunk, call.attrs.getInt("vocab"),
                          call.attrs.getInt("ignore_index"), static_cast<T *>(call.scratch)};
    if (withGrad) {
      s.lseIn = call.in[4].as<T>(), s.dlse = call.in[5].as<T>(), s.dtarget = call.in[6].as<T>();
      s.dh = call.out[0].as<T>(), s.dw = call.out[1].as<T>();
      if (sh.rows == 0) CUDA_CHECK(cudaMemsetAsync(s.dw, 0, (size_t)call.out[1].type.bytes(), call.stream));
    } else {
      s.lse = call.out[0].as<T>(), s.targetLogit = call.out[1].as<T>();
    }
    vocab::runStats(s, StreamLaunch{call.stream}, [&](const vocab::Gemm<T> &g) {
      GemmArgs a;
      a.dtype = dtype;
      a.ta = g.ta, a.tb = g.tb;
      a.m = g.m, a.n = g.n, a.k = g.k;
      a.a = g.a, a.lda = g.lda;
      a.b = g.b, a.ldb = g.ldb;
      a.c = g.c, a.ldc = g.ldc;
      a.accumulate = g.accumulate;
      call.gemm.run(a);
    });
  });
}

void runLinearCrossEntropyStats(const OpCall &call) { runStats(call, false); }
void runLinearCrossEntropyStatsGrad(const OpCall &call) { runStats(call, true); }

}  // namespace

void addVocabParallelKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"linear_cross_entropy_stats", runLinearCrossEntropyStats, statsScratch});
  k.push_back({"linear_cross_entropy_stats_grad", runLinearCrossEntropyStatsGrad, statsScratch});
}

}  // namespace lmrt::cuda::detail

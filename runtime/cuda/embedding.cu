/* Implements: lm.embedding (row gather), lm.embedding_grad (scatter-add of dy
   rows into a zeroed [V, D] table) and lm.embedding_grad_add (into another table
   gradient) on the GPU, and lm.take_along_axis (one
   thread per output element) with lm.take_along_axis_grad (one thread per line
   of dx along the axis, adding its dy line in order: no atomics, the CPU's
   order). The embedding gradient's kernel is in embedding_kernels.cuh (no atomics,
   the same bits every run). Ids outside the vocabulary (lmrt checks token inputs on
   the host first) give NaN rows rather than out-of-bounds accesses. */
#include "runtime/cuda/embedding_kernels.cuh"
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

template <typename T> __global__ void gather(const T *table, const int32_t *ids, T *out, int64_t n, int64_t v, int64_t d) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * d; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / d, col = i - row * d;
    const int32_t id = ids[row];
    out[i] = (id >= 0 && id < v) ? table[(int64_t)id * d + col] : T(NAN);
  }
}

void runEmbedding(const OpCall &call) {
  const int64_t v = call.in[0].shape()[0], d = call.in[0].shape()[1], n = call.in[1].numel();
  if (n * d == 0) return;
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    gather<T><<<gridFor(n * d), kThreads, 0, call.stream>>>(call.in[0].as<T>(), call.in[1].as<int32_t>(),
                                                            call.out[0].as<T>(), n, v, d);
    CUDA_CHECK_LAUNCH();
  });
}

/* dt = base (zeros when base is null) plus the dy rows scattered by ids; base may be
   dt itself (embedding_grad_add given its base's bytes). */
void scatterRowsInto(const OpCall &call, const DevTensor *base, const DevTensor &ids, const DevTensor &dy) {
  const DevTensor &dt = call.out[0];
  const int64_t v = dt.shape()[0], d = dt.shape()[1], n = ids.numel();
  byFloat(dy.type.dtype, [&](auto t) {
    using T = decltype(t);
    const size_t bytes = (size_t)(v * d) * sizeof(T);
    if (!base)
      CUDA_CHECK(cudaMemsetAsync(dt.data, 0, bytes, call.stream));
    else if (base->data != dt.data)
      CUDA_CHECK(cudaMemcpyAsync(dt.data, base->data, bytes, cudaMemcpyDeviceToDevice, call.stream));
    if (n * d == 0) return;
    embed::launchScatterAdd<T>(
        [&](auto kernel, unsigned gx, unsigned gy, int threads, auto... args) {
          kernel<<<dim3(gx, gy), threads, 0, call.stream>>>(args...);
          CUDA_CHECK_LAUNCH();
        },
        ids.as<int32_t>(), dy.as<T>(), dt.as<T>(), n, v, d);
  });
}

void runEmbeddingGrad(const OpCall &call) { scatterRowsInto(call, nullptr, call.in[0], call.in[1]); }
void runEmbeddingGradAdd(const OpCall &call) { scatterRowsInto(call, &call.in[0], call.in[1], call.in[2]); }

// take_along_axis. The iteration index `it` walks the result (forward) or its
// lines (backward: the result's shape with the axis set to 1); its offsets are
// 0: into indices (0 strides where they broadcast), 1: into x or dx without the
// axis, 2: into y or dy. An index outside [0, n) gives NaN, as embedding's ids.
struct AlongAxisIndex {
  StridedIndex it;
  int64_t n, m, inner, ixStep;
};

AlongAxisIndex alongAxis(const Shape &x, const Shape &ix, int64_t axis, bool lines) {
  checkRank("take_along_axis", x);
  AlongAxisIndex g;
  int64_t xs[kMaxRank], is[kMaxRank], ys[kMaxRank];
  Shape y = x;
  y[axis] = ix[axis];
  contiguousStrides(x, xs);
  contiguousStrides(ix, is);
  contiguousStrides(y, ys);
  g.it.rank = (int)x.size();
  for (size_t d = 0; d < x.size(); ++d) {
    g.it.shape[d] = (int64_t)d == axis && lines ? 1 : y[d];
    g.it.stride[0][d] = ix[d] == 1 && (int64_t)d != axis ? 0 : is[d];
    g.it.stride[1][d] = (int64_t)d == axis ? 0 : xs[d];
    g.it.stride[2][d] = ys[d];
  }
  g.n = x[axis];
  g.m = ix[axis];
  g.inner = xs[axis];
  g.ixStep = is[axis];
  return g;
}

template <typename T>
__global__ void takeAlongAxisKernel(const T *x, const int32_t *ix, T *y, int64_t total, AlongAxisIndex g) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[3];
    g.it.offsets(e, off, 3);
    const int32_t k = ix[off[0]];
    y[off[2]] = (k >= 0 && k < g.n) ? x[off[1] + (int64_t)k * g.inner] : T(NAN);
  }
}

template <typename T>
__global__ void takeAlongAxisGradKernel(const int32_t *ix, const T *dy, T *dx, int64_t lines, AlongAxisIndex g) {
  for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < lines; l += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[3];
    g.it.offsets(l, off, 3);
    for (int64_t j = 0; j < g.m; ++j) {
      const int32_t k = ix[off[0] + j * g.ixStep];
      if (k >= 0 && k < g.n)
        dx[off[1] + (int64_t)k * g.inner] += dy[off[2] + j * g.inner];
      else
        dx[off[1]] = T(NAN);
    }
  }
}

void runTakeAlongAxis(const OpCall &call) {
  const int64_t total = call.out[0].numel();
  if (total == 0) return;
  const AlongAxisIndex g = alongAxis(call.in[0].shape(), call.in[1].shape(), call.attrs.getInt("axis"), false);
  byFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    takeAlongAxisKernel<T><<<gridFor(total), kThreads, 0, call.stream>>>(
        call.in[0].as<T>(), call.in[1].as<int32_t>(), call.out[0].as<T>(), total, g);
    CUDA_CHECK_LAUNCH();
  });
}

void runTakeAlongAxisGrad(const OpCall &call) {
  const AlongAxisIndex g = alongAxis(call.out[0].shape(), call.in[0].shape(), call.attrs.getInt("axis"), true);
  const int64_t lines = g.m ? call.in[1].numel() / g.m : 0;
  byFloat(call.in[1].type.dtype, [&](auto t) {
    using T = decltype(t);
    CUDA_CHECK(cudaMemsetAsync(call.out[0].data, 0, (size_t)call.out[0].numel() * sizeof(T), call.stream));
    if (lines == 0) return;
    takeAlongAxisGradKernel<T><<<gridFor(lines), kThreads, 0, call.stream>>>(
        call.in[0].as<int32_t>(), call.in[1].as<T>(), call.out[0].as<T>(), lines, g);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void addEmbeddingKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"embedding", runEmbedding, noScratch});
  k.push_back({"embedding_grad", runEmbeddingGrad, noScratch});
  k.push_back({"embedding_grad_add", runEmbeddingGradAdd, noScratch});
  k.push_back({"take_along_axis", runTakeAlongAxis, noScratch});
  k.push_back({"take_along_axis_grad", runTakeAlongAxisGrad, noScratch});
}

}  // namespace lmrt::cuda::detail

/* Implements: lm.reshape, lm.transpose, lm.slice, lm.slice_grad, lm.fill and
   the runtime's "copy" on the GPU, for any element type (2-, 4- or 8-byte words).
   reshape and copy are device-to-device copies; fill a memset (zeros) or a
   grid-stride store; the others are one strided kernel: the iteration shape, a
   source and a destination stride per dim, except a slice that is rows of
   contiguous elements (GPT-2's q, k and v out of the packed QKV), one pitched copy. */
#include "runtime/cuda/kernels.cuh"

namespace lmrt::cuda::detail {
namespace {

/* dst[ix.offsets(i)[1]] = src[ix.offsets(i)[0]] for every index i of the iteration shape. */
template <typename W> __global__ void stridedCopy(const W *src, W *dst, int64_t n, StridedIndex ix) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[2];
    ix.offsets(i, off, 2);
    dst[off[1]] = src[off[0]];
  }
}

void launchCopy(const OpCall &call, const DevTensor &src, const DevTensor &dst, const StridedIndex &ix, int64_t n) {
  if (n == 0) return;
  if (dtypeSize(src.type.dtype) == 8)
    stridedCopy<uint64_t><<<gridFor(n), kThreads, 0, call.stream>>>(src.as<uint64_t>(), dst.as<uint64_t>(), n, ix);
  else if (dtypeSize(src.type.dtype) == 2)  // bf16, f16 (a ZeRO-3 parameter gathered in bf16, cut)
    stridedCopy<uint16_t><<<gridFor(n), kThreads, 0, call.stream>>>(src.as<uint16_t>(), dst.as<uint16_t>(), n, ix);
  else
    stridedCopy<uint32_t><<<gridFor(n), kThreads, 0, call.stream>>>(src.as<uint32_t>(), dst.as<uint32_t>(), n, ix);
  CUDA_CHECK_LAUNCH();
}

void runCopyBytes(const OpCall &call) {
  if (call.out[0].data == call.in[0].data) return;
  CUDA_CHECK(cudaMemcpyAsync(call.out[0].data, call.in[0].data, (size_t)call.in[0].type.bytes(),
                             cudaMemcpyDeviceToDevice, call.stream));
}

template <typename T> __global__ void fillKernel(T *y, int64_t n, T v) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = v;
}

void runFill(const OpCall &call) {
  const double value = call.attrs.getFloat("value");
  const int64_t n = call.out[0].numel();
  if (n == 0) return;
  if (value == 0.0 && !std::signbit(value)) {
    CUDA_CHECK(cudaMemsetAsync(call.out[0].data, 0, (size_t)call.out[0].type.bytes(), call.stream));
    return;
  }
  byFloat(call.out[0].type.dtype, [&](auto zero) {
    using T = decltype(zero);
    fillKernel<T><<<gridFor(n), kThreads, 0, call.stream>>>(call.out[0].as<T>(), n, static_cast<T>(value));
  });
  CUDA_CHECK_LAUNCH();
}

void runTranspose(const OpCall &call) {
  const auto &perm = call.attrs.getInts("permutation");
  const Shape &xs = call.in[0].shape(), &ys = call.out[0].shape();
  checkRank("transpose", ys);
  int64_t xst[kMaxRank];
  contiguousStrides(xs, xst);
  StridedIndex ix;
  ix.rank = (int)ys.size();
  contiguousStrides(ys, ix.stride[1]);
  for (int d = 0; d < ix.rank; ++d) {
    ix.shape[d] = ys[d];
    ix.stride[0][d] = xst[perm[d]];
  }
  launchCopy(call, call.in[0], call.out[0], ix, call.out[0].numel());
}

/* The slice [start:limit:stride] of `full` as an offset and strides into it. */
void sliceLayout(const Shape &full, const kernels::Attrs &a, int64_t &off, int64_t *st) {
  const auto &start = a.getInts("start"), &stride = a.getInts("stride");
  int64_t fst[kMaxRank];
  contiguousStrides(full, fst);
  off = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    off += start[i] * fst[i];
    st[i] = stride[i] * fst[i];
  }
}

/* A slice as `rows` runs of `cols` contiguous elements `pitch` apart in `full`, the first
   at `offset`: every stride 1, one dimension k cut, every other whole (those inside k make
   the runs longer). False for any other slice, and where a pitch in bytes exceeds what
   cudaMemcpy2DAsync takes. */
bool sliceAsRows(const Shape &full, const kernels::Attrs &a, size_t es, int64_t &offset, int64_t &rows,
                 int64_t &cols, int64_t &pitch) {
  const auto &start = a.getInts("start"), &limit = a.getInts("limit"), &stride = a.getInts("stride");
  const auto whole = [&](int i) { return stride[i] == 1 && start[i] == 0 && limit[i] == full[i]; };
  int k = (int)full.size() - 1;
  int64_t inner = 1;
  for (; k >= 0 && whole(k); --k) inner *= full[k];
  rows = 1;
  if (k < 0) {
    offset = 0, cols = pitch = inner;
    return (size_t)pitch * es <= (size_t)INT32_MAX;
  }
  if (stride[k] != 1) return false;
  for (int i = 0; i < k; ++i) {
    if (!whole(i)) return false;
    rows *= full[i];
  }
  offset = start[k] * inner, cols = (limit[k] - start[k]) * inner, pitch = full[k] * inner;
  return (size_t)pitch * es <= (size_t)INT32_MAX;
}

void runSlice(const OpCall &call) {
  const size_t es = dtypeSize(call.in[0].type.dtype);
  int64_t offset, rows, cols, pitch;
  if (sliceAsRows(call.in[0].shape(), call.attrs, es, offset, rows, cols, pitch)) {
    if (rows * cols > 0)
      CUDA_CHECK(cudaMemcpy2DAsync(call.out[0].data, (size_t)cols * es, call.in[0].as<char>() + (size_t)offset * es,
                                   (size_t)pitch * es, (size_t)cols * es, (size_t)rows, cudaMemcpyDeviceToDevice,
                                   call.stream));
    return;
  }
  const Shape &ys = call.out[0].shape();
  checkRank("slice", call.in[0].shape());
  StridedIndex ix;
  ix.rank = (int)ys.size();
  for (int d = 0; d < ix.rank; ++d) ix.shape[d] = ys[d];
  sliceLayout(call.in[0].shape(), call.attrs, ix.offset[0], ix.stride[0]);
  contiguousStrides(ys, ix.stride[1]);
  launchCopy(call, call.in[0], call.out[0], ix, call.out[0].numel());
}

void runSliceGrad(const OpCall &call) {
  const Shape &dys = call.in[0].shape();
  checkRank("slice_grad", call.out[0].shape());
  CUDA_CHECK(cudaMemsetAsync(call.out[0].data, 0, (size_t)call.out[0].type.bytes(), call.stream));
  const size_t es = dtypeSize(call.in[0].type.dtype);
  int64_t offset, rows, cols, pitch;
  if (sliceAsRows(call.out[0].shape(), call.attrs, es, offset, rows, cols, pitch)) {
    if (rows * cols > 0)
      CUDA_CHECK(cudaMemcpy2DAsync(call.out[0].as<char>() + (size_t)offset * es, (size_t)pitch * es, call.in[0].data,
                                   (size_t)cols * es, (size_t)cols * es, (size_t)rows, cudaMemcpyDeviceToDevice,
                                   call.stream));
    return;
  }
  StridedIndex ix;
  ix.rank = (int)dys.size();
  for (int d = 0; d < ix.rank; ++d) ix.shape[d] = dys[d];
  contiguousStrides(dys, ix.stride[0]);
  sliceLayout(call.out[0].shape(), call.attrs, ix.offset[1], ix.stride[1]);
  launchCopy(call, call.in[0], call.out[0], ix, call.in[0].numel());
}

}  // namespace

void addShapeKernels(std::vector<CudaKernelDef> &k) {
  k.push_back({"reshape", runCopyBytes, noScratch});
  k.push_back({"transpose", runTranspose, noScratch});
  // The cut of a ZeRO-3 parameter gathered in bf16 (launchCopy moves 2-byte elements).
  k.push_back({"slice", runSlice, noScratch, /*reducedPrecision=*/true});
  k.push_back({"slice_grad", runSliceGrad, noScratch});
  k.push_back({"fill", runFill, noScratch});
  k.push_back({"copy", runCopyBytes, noScratch});
}

}  // namespace lmrt::cuda::detail

/* Implements: the data-movement ops lm.reshape, lm.transpose, lm.slice,
   lm.slice_grad, lm.fill (every element one value: an unused parameter's zero
   gradient), plus "copy" (a plain copy of a tensor into a buffer of the same
   type, for the executor and plan writer when a value must be materialised in
   another buffer). They work on any element type (f32, f64, i32) by moving
   4- or 8-byte words. Transpose and the slices are one strided walk: the
   iteration shape, a source and a destination offset and stride per dim. */
#include "runtime/cpu/kernels/kernel_common.h"

#include <cmath>

namespace lmrt::kernels::detail {
namespace {

std::vector<int64_t> contiguousStrides(const Shape &s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

/* stridedCopy for the case where dim p reads contiguously (sSt[p] == 1) and the
   last dim writes contiguously: 32 x 32 tiles of the (p, last) plane. */
template <typename W>
void tiledCopy(const Shape &shape, size_t p, const W *src, int64_t sOff, const std::vector<int64_t> &sSt, W *dst,
               int64_t dOff, const std::vector<int64_t> &dSt) {
  constexpr int64_t kTile = 32;
  size_t rank = shape.size(), last = rank - 1;
  int64_t np = shape[p], nl = shape[last];
  int64_t planes = numel(shape) / (np * nl), tilesP = (np + kTile - 1) / kTile;
#pragma omp parallel for if (numel(shape) >= kParallelMin)
  for (int64_t item = 0; item < planes * tilesP; ++item) {
    int64_t plane = item / tilesP, p0 = (item % tilesP) * kTile, p1 = std::min(np, p0 + kTile);
    int64_t so = sOff, dO = dOff, rem = plane;
    for (size_t d = rank; d-- > 0;) {  // unravel `plane` over the dims other than p and last
      if (d == p || d == last) continue;
      int64_t idx = rem % shape[d];
      rem /= shape[d];
      so += idx * sSt[d];
      dO += idx * dSt[d];
    }
    const int64_t dp = dSt[p], sl = sSt[last];  // locals: W stores could alias the vectors
    for (int64_t l0 = 0; l0 < nl; l0 += kTile) {
      int64_t l1 = std::min(nl, l0 + kTile);
      for (int64_t i = p0; i < p1; ++i) {
        W *drow = dst + dO + i * dp;
        const W *scol = src + so + i;
        for (int64_t j = l0; j < l1; ++j) drow[j] = scol[j * sl];
      }
    }
  }
}

/* dst[dOff + Σ idx_i dSt_i] = src[sOff + Σ idx_i sSt_i] for every index of `shape`. */
template <typename W>
void stridedCopy(const Shape &shape, const W *src, int64_t sOff, const std::vector<int64_t> &sSt, W *dst,
                 int64_t dOff, const std::vector<int64_t> &dSt) {
  int64_t n = numel(shape);
  if (n == 0) return;
  if (shape.empty()) {
    dst[dOff] = src[sOff];
    return;
  }
  size_t rank = shape.size();
  int64_t inner = shape[rank - 1], is = sSt[rank - 1], id = dSt[rank - 1];
  // A transpose that moves the source's contiguous dim p away from the end:
  // copy in 32 x 32 tiles of the (p, last) plane so both the reads (along p)
  // and the writes (along last) stay in cache; element-wise walking there
  // strides through memory (a [50257, 768] transpose took seconds).
  if (is != 1 && id == 1) {
    for (size_t p = 0; p + 1 < rank; ++p)
      if (sSt[p] == 1 && shape[p] > 1) {
        tiledCopy(shape, p, src, sOff, sSt, dst, dOff, dSt);
        return;
      }
  }
  int64_t rows = n / inner;
#pragma omp parallel for if (n >= kParallelMin && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t so = sOff, dO = dOff, rem = r;
    for (size_t d = rank - 1; d-- > 0;) {
      int64_t idx = rem % shape[d];
      rem /= shape[d];
      so += idx * sSt[d];
      dO += idx * dSt[d];
    }
    if (is == 1 && id == 1) {
      std::memcpy(dst + dO, src + so, sizeof(W) * inner);
    } else {
      for (int64_t j = 0; j < inner; ++j) dst[dO + j * id] = src[so + j * is];
    }
  }
}

/* Runs stridedCopy on words of the element size: 8 (f64), 4 (f32, i32) or 2
   bytes (bf16, f16: mixed-precision plans move those through the same ops). */
template <typename F> void byWord(DType t, F &&f) {
  switch (dtypeSize(t)) {
  case 8: f(uint64_t{}); break;
  case 2: f(uint16_t{}); break;
  default: f(uint32_t{}); break;
  }
}

// ----------------------------------------------------------------------------
// reshape and copy: same bytes

std::string checkReshape(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("reshape", in, out, 1, 1, [&]() -> std::string {
    std::string err;
    if (!shapes::reshape(in[0].shape, out[0].shape, err)) return err;
    return expectType("reshape", "out", out[0], in[0].dtype, out[0].shape);
  });
}

std::string checkCopy(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("copy", in, out, 1, 1, [&]() -> std::string {
    return expectType("copy", "out", out[0], in[0].dtype, in[0].shape);
  });
}

void runCopyBytes(const KernelCall &call) {
  if (call.out[0].data != call.in[0].data)
    std::memmove(call.out[0].data, call.in[0].data, (size_t)call.in[0].type.bytes());
}

// ----------------------------------------------------------------------------
// fill

std::string checkFill(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &attrs) {
  return guardCheck("fill", in, out, 0, 1, [&]() -> std::string {
    attrs.getFloat("value");
    return expectFloat("fill", "result", out[0]);
  });
}

void runFill(const KernelCall &call) {
  double value = call.attrs.getFloat("value");
  int64_t n = call.out[0].type.numel();
  if (value == 0.0 && !std::signbit(value)) {
    std::memset(call.out[0].data, 0, (size_t)call.out[0].type.bytes());
    return;
  }
  dispatchFloat(call.out[0].type.dtype, [&](auto zero) {
    using T = decltype(zero);
    T *y = call.out[0].as<T>();
    T v = static_cast<T>(value);
#pragma omp parallel for if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  });
}

// ----------------------------------------------------------------------------
// transpose

std::string checkTranspose(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                           const Attrs &attrs) {
  return guardCheck("transpose", in, out, 1, 1, [&]() -> std::string {
    std::string err;
    auto shape = shapes::transpose(in[0].shape, attrs.getInts("permutation"), err);
    if (!shape) return err;
    return expectType("transpose", "out", out[0], in[0].dtype, *shape);
  });
}

void runTranspose(const KernelCall &call) {
  const auto &perm = call.attrs.getInts("permutation");
  const Shape &xs = call.in[0].shape(), &ys = call.out[0].shape();
  auto xSt = contiguousStrides(xs);
  std::vector<int64_t> sSt(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) sSt[i] = xSt[perm[i]];
  byWord(call.in[0].type.dtype, [&](auto w) {
    using W = decltype(w);
    stridedCopy<W>(ys, call.in[0].as<W>(), 0, sSt, call.out[0].as<W>(), 0, contiguousStrides(ys));
  });
}

// ----------------------------------------------------------------------------
// slice and slice_grad

struct SliceAttrs {
  const std::vector<int64_t> &start, &limit, &stride;
};
SliceAttrs sliceAttrs(const Attrs &a) { return {a.getInts("start"), a.getInts("limit"), a.getInts("stride")}; }

/* Offset and per-dim strides of the sliced elements inside the full tensor. */
void sliceLayout(const Shape &full, const SliceAttrs &s, int64_t &off, std::vector<int64_t> &st) {
  auto fSt = contiguousStrides(full);
  off = 0;
  st.resize(full.size());
  for (size_t i = 0; i < full.size(); ++i) {
    off += s.start[i] * fSt[i];
    st[i] = s.stride[i] * fSt[i];
  }
}

std::string checkSlice(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &attrs) {
  return guardCheck("slice", in, out, 1, 1, [&]() -> std::string {
    SliceAttrs s = sliceAttrs(attrs);
    std::string err;
    auto shape = shapes::slice(in[0].shape, s.start, s.limit, s.stride, err);
    if (!shape) return err;
    return expectType("slice", "out", out[0], in[0].dtype, *shape);
  });
}

void runSlice(const KernelCall &call) {
  SliceAttrs s = sliceAttrs(call.attrs);
  int64_t off;
  std::vector<int64_t> st;
  sliceLayout(call.in[0].shape(), s, off, st);
  const Shape &ys = call.out[0].shape();
  byWord(call.in[0].type.dtype, [&](auto w) {
    using W = decltype(w);
    stridedCopy<W>(ys, call.in[0].as<W>(), off, st, call.out[0].as<W>(), 0, contiguousStrides(ys));
  });
}

std::string checkSliceGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                           const Attrs &attrs) {
  return guardCheck("slice_grad", in, out, 1, 1, [&]() -> std::string {
    SliceAttrs s = sliceAttrs(attrs);
    std::string err;
    // The result has the forward input's type; dy must be the forward slice's shape.
    auto shape = shapes::slice(out[0].shape, s.start, s.limit, s.stride, err);
    if (!shape) return "slice_grad" + err.substr(err.find(':'));
    if (in[0].shape != *shape)
      return "slice_grad: dy " + in[0].str() + " must be " + shapes::str(*shape) + ", the slice of result " +
             out[0].str();
    return expectType("slice_grad", "dx", out[0], in[0].dtype, out[0].shape);
  });
}

void runSliceGrad(const KernelCall &call) {
  SliceAttrs s = sliceAttrs(call.attrs);
  int64_t off;
  std::vector<int64_t> st;
  sliceLayout(call.out[0].shape(), s, off, st);
  const Shape &ys = call.in[0].shape();
  std::memset(call.out[0].data, 0, (size_t)call.out[0].type.bytes());
  byWord(call.in[0].type.dtype, [&](auto w) {
    using W = decltype(w);
    stridedCopy<W>(ys, call.in[0].as<W>(), 0, contiguousStrides(ys), call.out[0].as<W>(), off, st);
  });
}

}  // namespace

void addShapeKernels(std::vector<KernelDef> &k) {
  k.push_back({"reshape", 1, 1, checkReshape, runCopyBytes});
  k.push_back({"transpose", 1, 1, checkTranspose, runTranspose});
  k.push_back({"slice", 1, 1, checkSlice, runSlice});
  k.push_back({"slice_grad", 1, 1, checkSliceGrad, runSliceGrad});
  k.push_back({"fill", 0, 1, checkFill, runFill});
  k.push_back({"copy", 1, 1, checkCopy, runCopyBytes});
}

}  // namespace lmrt::kernels::detail

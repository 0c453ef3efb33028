/* Implements: lm.concat (two operands along one axis: row copies) and lm.reduce_max
   (maximum over a sorted set of axes, kept as size-1 dims). reduce_max has a fast
   path for the last axis (one row at a time, parallel over rows); other axis sets
   walk x once in order, so every result is bit-identical for any thread count.
   Sums and means need no kernel of their own: the frontend writes them as lm.sum_to
   (docs/language.md). */
#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// ----------------------------------------------------------------------------
// concat

std::string checkConcat(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &attrs) {
  return guardCheck("concat", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("concat", "lhs", in[0]));
    LMRT_CHECK(expectSameDType("concat", "rhs", in[1], "lhs", in[0]));
    std::string err;
    auto shape = shapes::concat(in[0].shape, in[1].shape, attrs.getInt("axis"), err);
    if (!shape) return err;
    return expectType("concat", "out", out[0], in[0].dtype, *shape);
  });
}

void runConcat(const KernelCall &call) {
  const TensorRef &a = call.in[0], &b = call.in[1], &o = call.out[0];
  size_t axis = (size_t)call.attrs.getInt("axis");
  size_t elem = dtypeSize(o.type.dtype);
  int64_t outer = product(a.shape(), 0, axis);
  int64_t na = product(a.shape(), axis, a.shape().size()), nb = product(b.shape(), axis, b.shape().size());
  const char *ap = (const char *)a.data, *bp = (const char *)b.data;
  char *op = (char *)o.data;
#pragma omp parallel for if (outer * (na + nb) >= kParallelMin)
  for (int64_t r = 0; r < outer; ++r) {
    char *dst = op + (size_t)(r * (na + nb)) * elem;
    if (na) std::memcpy(dst, ap + (size_t)(r * na) * elem, (size_t)na * elem);
    if (nb) std::memcpy(dst + (size_t)na * elem, bp + (size_t)(r * nb) * elem, (size_t)nb * elem);
  }
}

// ----------------------------------------------------------------------------
// reduce_max

std::string checkReduceMax(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                           const Attrs &attrs) {
  return guardCheck("reduce_max", in, out, 1, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("reduce_max", "x", in[0]));
    std::string err;
    auto shape = shapes::reduceAxes(in[0].shape, attrs.getInts("axes"), err);
    if (!shape) return err;
    return expectType("reduce_max", "out", out[0], in[0].dtype, *shape);
  });
}

template <typename T> void reduceMaxT(const KernelCall &call) {
  const TensorRef &x = call.in[0], &o = call.out[0];
  const Shape &xs = x.shape(), &os = o.shape();
  const T *xp = x.as<T>();
  T *op = o.as<T>();
  const std::vector<int64_t> &axes = call.attrs.getInts("axes");
  int64_t n = x.numel(), m = o.numel();
  if (n == 0) return;
  if (axes.size() == 1 && axes[0] == (int64_t)xs.size() - 1) {  // rows
    int64_t d = xs.back();
#pragma omp parallel for if (n >= kParallelMin)
    for (int64_t r = 0; r < m; ++r) {
      const T *row = xp + r * d;
      T mx = row[0];
      for (int64_t j = 1; j < d; ++j) mx = row[j] > mx || row[j] != row[j] ? row[j] : mx;  // NaN wins
      op[r] = mx;
    }
    return;
  }
  // General: the output offset of each x element through the kept dims' strides.
  std::vector<int64_t> stride(xs.size(), 0);
  int64_t acc = 1;
  for (size_t d = xs.size(); d-- > 0;) {
    stride[d] = os[d] == 1 ? 0 : acc;
    acc *= os[d];
  }
  std::vector<bool> seen((size_t)m, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0;
    for (size_t d = xs.size(); d-- > 0;) {
      off += (rem % xs[d]) * stride[d];
      rem /= xs[d];
    }
    T v = xp[i];
    if (!seen[off] || v > op[off] || v != v) op[off] = v;
    seen[off] = true;
  }
}

void runReduceMax(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { reduceMaxT<decltype(t)>(call); });
}

}  // namespace

void addReduceKernels(std::vector<KernelDef> &k) {
  k.push_back({"concat", 2, 1, checkConcat, runConcat});
  k.push_back({"reduce_max", 1, 1, checkReduceMax, runReduceMax});
}

}  // namespace lmrt::kernels::detail

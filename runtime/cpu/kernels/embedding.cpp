/* Implements: lm.embedding (row gather), lm.embedding_grad (scatter-add of
   dy rows into a zeroed [V, D] table) and lm.embedding_grad_add (into a copy of
   another table gradient, or into it in place); lm.take_along_axis (gather along one
   axis, the index broadcasting) and lm.take_along_axis_grad (its scatter-add). Ids are validated serially before any
   parallel work, so a bad id is reported with its flat position. The backward
   splits the D columns between threads, so every thread visits all ids but
   writes disjoint columns: no atomics, same result for any thread count. */
#include "runtime/cpu/kernels/kernel_common.h"
#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::detail {
namespace {

void validateIds(const char *op, const int32_t *ids, int64_t n, int64_t vocab) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      fail("%s: token id %d at flat position %lld is outside the vocabulary [0, %lld)", op, ids[i], (long long)i,
           (long long)vocab);
}

std::string checkEmbedding(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("embedding", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("embedding", "table", in[0]));
    LMRT_CHECK(expectI32("embedding", "ids", in[1]));
    std::string err;
    auto shape = shapes::embedding(in[0].shape, in[1].shape, err);
    if (!shape) return err;
    return expectType("embedding", "out", out[0], in[0].dtype, *shape);
  });
}

void runEmbedding(const KernelCall &call) {
  const TensorRef &table = call.in[0];
  const int32_t *ids = call.in[1].as<int32_t>();
  int64_t v = table.shape()[0], d = table.shape()[1], n = call.in[1].numel();
  validateIds("embedding", ids, n, v);
  size_t rowBytes = (size_t)d * dtypeSize(table.type.dtype);
  const char *src = static_cast<const char *>(table.data);
  char *dst = static_cast<char *>(call.out[0].data);
#pragma omp parallel for if (n * d >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * rowBytes, src + ids[i] * rowBytes, rowBytes);
}

std::string checkEmbeddingGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                               const Attrs &) {
  return guardCheck("embedding_grad", in, out, 2, 1, [&]() -> std::string {
    const char *op = "embedding_grad";
    LMRT_CHECK(expectI32(op, "ids", in[0]));
    LMRT_CHECK(expectFloat(op, "dy", in[1]));
    if (out[0].shape.size() != 2)
      return std::string(op) + ": result dtable " + out[0].str() + " must have rank 2 [V, D]";
    std::string err;
    auto shape = shapes::embedding(out[0].shape, in[0].shape, err);
    if (!shape) return std::string(op) + err.substr(err.find(':'));
    if (in[1].shape != *shape)
      return std::string(op) + ": dy " + in[1].str() + " must be " + shapes::str(*shape) + " (ids " + in[0].str() +
             " with D of dtable " + out[0].str() + ")";
    return expectType(op, "dtable", out[0], in[1].dtype, out[0].shape);
  });
}

/* dt = base (zeros when base is null) with each dy row added to row ids[i], in order.
   base may be dt itself (a plan that gives embedding_grad_add's result its base's
   bytes): then there is nothing to copy. */
template <typename T>
LMRT_SIMD_CLONES void scatterRows(const int32_t *ids, const T *dy, const T *base, T *dt, int64_t v, int64_t d,
                                  int64_t n) {
  constexpr int64_t kBlock = 32;
  if (base != dt) {
#pragma omp parallel for if (v * d >= kParallelMin)
    for (int64_t r = 0; r < v; ++r) {
      if (base)
        std::memcpy(dt + r * d, base + r * d, sizeof(T) * d);
      else
        std::memset(dt + r * d, 0, sizeof(T) * d);
    }
  }
#pragma omp parallel for if (n * d >= kParallelMin && d >= 2 * kBlock)
  for (int64_t c0 = 0; c0 < d; c0 += kBlock) {
    int64_t c1 = std::min(d, c0 + kBlock);
    for (int64_t i = 0; i < n; ++i) {
      T *row = dt + (int64_t)ids[i] * d;
      const T *g = dy + i * d;
      for (int64_t j = c0; j < c1; ++j) row[j] += g[j];
    }
  }
}

void runEmbeddingGrad(const KernelCall &call) {
  const int32_t *ids = call.in[0].as<int32_t>();
  int64_t v = call.out[0].shape()[0], d = call.out[0].shape()[1], n = call.in[0].numel();
  validateIds("embedding_grad", ids, n, v);
  dispatchFloat(call.in[1].type.dtype, [&](auto t) {
    using T = decltype(t);
    scatterRows<T>(ids, call.in[1].as<T>(), nullptr, call.out[0].as<T>(), v, d, n);
  });
}

std::string checkEmbeddingGradAdd(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                  const Attrs &) {
  return guardCheck("embedding_grad_add", in, out, 3, 1, [&]() -> std::string {
    const char *op = "embedding_grad_add";
    LMRT_CHECK(expectFloat(op, "base", in[0]));
    LMRT_CHECK(expectI32(op, "ids", in[1]));
    LMRT_CHECK(expectSameDType(op, "dy", in[2], "base", in[0]));
    std::string err;
    auto shape = shapes::embeddingGradAdd(in[0].shape, in[1].shape, in[2].shape, err);
    if (!shape) return err;
    return expectType(op, "dtable", out[0], in[0].dtype, *shape);
  });
}

void runEmbeddingGradAdd(const KernelCall &call) {
  const int32_t *ids = call.in[1].as<int32_t>();
  int64_t v = call.out[0].shape()[0], d = call.out[0].shape()[1], n = call.in[1].numel();
  validateIds("embedding_grad_add", ids, n, v);
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    scatterRows<T>(ids, call.in[2].as<T>(), call.in[0].as<T>(), call.out[0].as<T>(), v, d, n);
  });
}

// ----------------------------------------------------------------------------
// take_along_axis: x [...pre, n, ...post], indices [...pre', m, ...post'] (each
// dim x's or 1), out [...pre, m, ...post]. A "line" is one (pre, post) position:
// the m outputs it gathers all come from x's line at the same (pre, post), so
// lines are independent and the backward's lines write disjoint parts of dx.

struct AlongAxis {
  int64_t outer = 1, inner = 1, n = 0, m = 0, axis = 0;
  Shape shape;                  // the result's shape
  std::vector<int64_t> ixStride;  // indices' strides per result dim, 0 where it broadcasts

  AlongAxis(const Shape &x, const Shape &ix, int64_t a) : n(x[a]), m(ix[a]), axis(a), shape(x) {
    shape[a] = m;
    ixStride.assign(x.size(), 0);
    int64_t acc = 1;
    for (size_t d = x.size(); d-- > 0;) {
      ixStride[d] = ix[d] == 1 && (int64_t)d != a ? 0 : acc;
      acc *= ix[d];
    }
    for (int64_t d = 0; d < a; ++d) outer *= x[d];
    for (size_t d = a + 1; d < x.size(); ++d) inner *= x[d];
  }
  /* The offset in indices of line (o, i)'s first entry. */
  int64_t ixBase(int64_t o, int64_t i) const {
    int64_t off = 0;
    for (size_t d = shape.size(); d-- > (size_t)axis + 1;) {
      off += (i % shape[d]) * ixStride[d];
      i /= shape[d];
    }
    for (int64_t d = axis; d-- > 0;) {
      off += (o % shape[d]) * ixStride[d];
      o /= shape[d];
    }
    return off;
  }
};

void validateIndices(const char *op, const int32_t *ix, int64_t count, int64_t n) {
  for (int64_t i = 0; i < count; ++i)
    if (ix[i] < 0 || ix[i] >= n)
      fail("%s: index %d at flat position %lld is outside the axis [0, %lld)", op, ix[i], (long long)i,
           (long long)n);
}

std::string checkTakeAlongAxis(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                               const Attrs &attrs) {
  return guardCheck("take_along_axis", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("take_along_axis", "x", in[0]));
    LMRT_CHECK(expectI32("take_along_axis", "indices", in[1]));
    std::string err;
    auto shape = shapes::takeAlongAxis(in[0].shape, in[1].shape, attrs.getInt("axis"), err);
    if (!shape) return err;
    return expectType("take_along_axis", "out", out[0], in[0].dtype, *shape);
  });
}

template <typename T> void takeAlongAxisT(const KernelCall &call) {
  const T *x = call.in[0].as<T>();
  const int32_t *ix = call.in[1].as<int32_t>();
  T *y = call.out[0].as<T>();
  AlongAxis g(call.in[0].shape(), call.in[1].shape(), call.attrs.getInt("axis"));
  validateIndices("take_along_axis", ix, call.in[1].numel(), g.n);
  const int64_t step = g.ixStride[g.axis];
#pragma omp parallel for if (g.outer * g.inner * g.m >= kParallelMin)
  for (int64_t line = 0; line < g.outer * g.inner; ++line) {
    const int64_t o = line / g.inner, i = line - o * g.inner, base = g.ixBase(o, i);
    const T *xl = x + o * g.n * g.inner + i;
    T *yl = y + o * g.m * g.inner + i;
    for (int64_t k = 0; k < g.m; ++k) yl[k * g.inner] = xl[(int64_t)ix[base + k * step] * g.inner];
  }
}

void runTakeAlongAxis(const KernelCall &call) {
  dispatchFloat(call.in[0].type.dtype, [&](auto t) { takeAlongAxisT<decltype(t)>(call); });
}

std::string checkTakeAlongAxisGrad(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                                   const Attrs &attrs) {
  return guardCheck("take_along_axis_grad", in, out, 2, 1, [&]() -> std::string {
    const char *op = "take_along_axis_grad";
    LMRT_CHECK(expectI32(op, "indices", in[0]));
    LMRT_CHECK(expectFloat(op, "dy", in[1]));
    std::string err;
    auto shape = shapes::takeAlongAxis(out[0].shape, in[0].shape, attrs.getInt("axis"), err, op);
    if (!shape) return err;
    if (in[1].shape != *shape)
      return std::string(op) + ": dy " + in[1].str() + " must be " + shapes::str(*shape) + " (dx " +
             out[0].str() + " with the indices' size along the axis)";
    return expectType(op, "dx", out[0], in[1].dtype, out[0].shape);
  });
}

template <typename T> void takeAlongAxisGradT(const KernelCall &call) {
  const int32_t *ix = call.in[0].as<int32_t>();
  const T *dy = call.in[1].as<T>();
  T *dx = call.out[0].as<T>();
  AlongAxis g(call.out[0].shape(), call.in[0].shape(), call.attrs.getInt("axis"));
  validateIndices("take_along_axis_grad", ix, call.in[0].numel(), g.n);
  std::memset(dx, 0, sizeof(T) * (size_t)call.out[0].numel());
  const int64_t step = g.ixStride[g.axis];
#pragma omp parallel for if (g.outer * g.inner * g.m >= kParallelMin)
  for (int64_t line = 0; line < g.outer * g.inner; ++line) {
    const int64_t o = line / g.inner, i = line - o * g.inner, base = g.ixBase(o, i);
    T *dxl = dx + o * g.n * g.inner + i;
    const T *dyl = dy + o * g.m * g.inner + i;
    for (int64_t k = 0; k < g.m; ++k) dxl[(int64_t)ix[base + k * step] * g.inner] += dyl[k * g.inner];
  }
}

void runTakeAlongAxisGrad(const KernelCall &call) {
  dispatchFloat(call.in[1].type.dtype, [&](auto t) { takeAlongAxisGradT<decltype(t)>(call); });
}

}  // namespace

void addEmbeddingKernels(std::vector<KernelDef> &k) {
  k.push_back({"embedding", 2, 1, checkEmbedding, runEmbedding});
  k.push_back({"embedding_grad", 2, 1, checkEmbeddingGrad, runEmbeddingGrad});
  k.push_back({"embedding_grad_add", 3, 1, checkEmbeddingGradAdd, runEmbeddingGradAdd});
  k.push_back({"take_along_axis", 2, 1, checkTakeAlongAxis, runTakeAlongAxis});
  k.push_back({"take_along_axis_grad", 2, 1, checkTakeAlongAxisGrad, runTakeAlongAxisGrad});
}

}  // namespace lmrt::kernels::detail

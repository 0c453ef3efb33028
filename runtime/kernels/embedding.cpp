/* Implements: lm.embedding (row gather) and lm.embedding_grad (scatter-add of
   dy rows into a zeroed [V, D] table). Ids are validated serially before any
   parallel work, so a bad id is reported with its flat position. The backward
   splits the D columns between threads, so every thread visits all ids but
   writes disjoint columns: no atomics, same result for any thread count. */
#include "runtime/kernels/kernel_common.h"
#include "runtime/kernels/kernel_math.h"

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

template <typename T> LMRT_SIMD_CLONES void embeddingGradT(const KernelCall &call) {
  const int32_t *ids = call.in[0].as<int32_t>();
  const T *dy = call.in[1].as<T>();
  T *dt = call.out[0].as<T>();
  int64_t v = call.out[0].shape()[0], d = call.out[0].shape()[1], n = call.in[0].numel();
  validateIds("embedding_grad", ids, n, v);
  constexpr int64_t kBlock = 32;
#pragma omp parallel for if (v * d >= kParallelMin)
  for (int64_t r = 0; r < v; ++r) std::memset(dt + r * d, 0, sizeof(T) * d);
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
  dispatchFloat(call.in[1].type.dtype, [&](auto t) { embeddingGradT<decltype(t)>(call); });
}

}  // namespace

void addEmbeddingKernels(std::vector<KernelDef> &k) {
  k.push_back({"embedding", 2, 1, checkEmbedding, runEmbedding});
  k.push_back({"embedding_grad", 2, 1, checkEmbeddingGrad, runEmbeddingGrad});
}

}  // namespace lmrt::kernels::detail

/* Implements: helpers shared by the kernel families (internal to lmrt_kernels):
   check() building blocks that produce "op: ..." messages, the f32/f64 dispatch,
   the OpenMP size threshold, and each family's registration function. */
#pragma once
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/cpu/kernels/registry.h"
#include "contract/shape_rules.h"

namespace lmrt::kernels::detail {

/* Below this many elements of work a loop runs on one thread: forking costs more. */
constexpr int64_t kParallelMin = 1 << 14;

/* Runs a check body after verifying operand/result counts; a thrown lmrt::Error
   (e.g. a missing attribute from an Attrs getter) becomes "op: <message>". */
template <typename Body>
std::string guardCheck(const char *op, const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                       size_t nIn, size_t nOut, Body &&body) {
  if (in.size() != nIn || out.size() != nOut)
    return std::string(op) + ": expected " + std::to_string(nIn) + " operands and " + std::to_string(nOut) +
           " results, got " + std::to_string(in.size()) + " and " + std::to_string(out.size());
  try {
    return body();
  } catch (const Error &e) {
    return std::string(op) + ": " + e.what();
  }
}

/* "" when t is f32 or f64. */
inline std::string expectFloat(const char *op, const char *what, const TensorType &t) {
  if (t.dtype == DType::F32 || t.dtype == DType::F64) return "";
  return std::string(op) + ": " + what + " " + t.str() + " must be f32 or f64";
}

/* "" when t is i32. */
inline std::string expectI32(const char *op, const char *what, const TensorType &t) {
  if (t.dtype == DType::I32) return "";
  return std::string(op) + ": " + what + " " + t.str() + " must be i32";
}

/* "" when `t` has the same element type as `ref` (all float operands of an op share one). */
inline std::string expectSameDType(const char *op, const char *what, const TensorType &t, const char *refWhat,
                                   const TensorType &ref) {
  if (t.dtype == ref.dtype) return "";
  return std::string(op) + ": " + what + " " + t.str() + " must have the element type of " + refWhat + " " +
         ref.str();
}

/* "" when a result has exactly the expected type. */
inline std::string expectType(const char *op, const char *what, const TensorType &got, DType dtype,
                              const Shape &shape) {
  TensorType want{dtype, shape};
  if (got.dtype == dtype && got.shape == shape) return "";
  return std::string(op) + ": result " + what + " must be " + want.str() + ", got " + got.str();
}

#define LMRT_CHECK(expr)            \
  do {                              \
    std::string e_ = (expr);        \
    if (!e_.empty()) return e_;     \
  } while (0)

/* Calls f(float{}) or f(double{}) by the element type. */
template <typename F> void dispatchFloat(DType t, F &&f) {
  if (t == DType::F64)
    f(double{});
  else
    f(float{});
}

/* Called on each block of a GEMM's output right after the block is computed, on the
   thread that computed it: batch element bi, rows [r0, r1) x columns [c0, c1). */
using BlockFn = std::function<void(int64_t bi, int64_t r0, int64_t r1, int64_t c0, int64_t c1)>;

/* c[rows, n] = a[rows, k] b, with b [k, n] (or [n, k] when transposeB), as library
   GEMMs on blocks spread over the OpenMP threads like lm.matmul's; after each
   block's GEMM, the same thread calls after() on the block while it is still in
   cache (a generated epilogue). f32 or f64 by a's element type. */
void gemmWithEpilogue(const TensorRef &a, const TensorRef &b, bool transposeB, const TensorRef &c, int64_t rows,
                      int64_t k, int64_t n, const BlockFn &after);

/* Each family's kernels, gathered by registry.cpp. */
void addMatmulKernels(std::vector<KernelDef> &k);
void addCastKernels(std::vector<KernelDef> &k);
void addElementwiseKernels(std::vector<KernelDef> &k);
void addReduceKernels(std::vector<KernelDef> &k);
void addLayerNormKernels(std::vector<KernelDef> &k);
void addAttentionKernels(std::vector<KernelDef> &k);
void addSoftmaxKernels(std::vector<KernelDef> &k);
void addLinearCrossEntropyKernels(std::vector<KernelDef> &k);
void addEmbeddingKernels(std::vector<KernelDef> &k);
void addShapeKernels(std::vector<KernelDef> &k);
void addSampleKernels(std::vector<KernelDef> &k);
void addDecodeKernels(std::vector<KernelDef> &k);
void addCollectiveKernels(std::vector<KernelDef> &k);  // collective.cpp: lm.all_reduce, reduce_scatter, all_gather

}  // namespace lmrt::kernels::detail

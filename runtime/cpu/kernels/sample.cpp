/* Implements: lm.sample (a categorical draw per row of logits, from the random
   bits the runtime supplies: sample_math.h), lm.to_float (i32 ids to the
   float type, for masks on ids), lm.to_int (back, truncating) and lm.dropout (a mask from each row's key:
   dropout_math.h) on the CPU. */
#include "runtime/cpu/kernels/kernel_common.h"
#include "contract/dropout_math.h"
#include "contract/sample_math.h"

namespace lmrt::kernels::detail {
namespace {

std::string checkSample(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("sample", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("sample", "logits", in[0]));
    LMRT_CHECK(expectI32("sample", "bits", in[1]));
    std::string err;
    std::optional<shapes::Dims> s = shapes::sample(in[0].shape, in[1].shape, err);
    if (!s) return err;
    return expectType("sample", "ids", out[0], DType::I32, *s);
  });
}

void runSample(const KernelCall &call) {
  const TensorRef &logits = call.in[0];
  const int64_t v = logits.type.shape.back(), rows = call.out[0].numel();
  const uint32_t *bits = reinterpret_cast<const uint32_t *>(call.in[1].as<int32_t>());
  int32_t *ids = call.out[0].as<int32_t>();
  int64_t bad = -1;
  dispatchFloat(logits.type.dtype, [&](auto t) {
    using T = decltype(t);
    const T *x = logits.as<T>();
#pragma omp parallel for if (rows * v >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) ids[r] = lmc::sampleRow(x + r * v, v, bits[r]);
  });
  for (int64_t r = 0; r < rows && bad < 0; ++r)
    if (ids[r] < 0) bad = r;
  if (bad >= 0)
    fail("sample: logits row %lld (of %lld) is not finite (NaN or +inf), so it defines no distribution",
         (long long)bad, (long long)rows);
}

std::string checkToFloat(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("to_float", in, out, 1, 1, [&]() -> std::string {
    LMRT_CHECK(expectI32("to_float", "x", in[0]));
    LMRT_CHECK(expectFloat("to_float", "result", out[0]));
    return expectType("to_float", "result", out[0], out[0].dtype, in[0].shape);
  });
}

void runToFloat(const KernelCall &call) {
  const int32_t *x = call.in[0].as<int32_t>();
  const int64_t n = call.in[0].numel();
  dispatchFloat(call.out[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    T *y = call.out[0].as<T>();
    for (int64_t i = 0; i < n; ++i) y[i] = (T)x[i];
  });
}

std::string checkToInt(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &) {
  return guardCheck("to_int", in, out, 1, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("to_int", "x", in[0]));
    return expectType("to_int", "result", out[0], DType::I32, in[0].shape);
  });
}

/* A value C cannot convert (not finite, outside the i32 range) is an error,
   not an id chosen by the platform. */
void runToInt(const KernelCall &call) {
  const int64_t n = call.in[0].numel();
  int32_t *y = call.out[0].as<int32_t>();
  int64_t bad = -1;
  double badValue = 0;
  dispatchFloat(call.in[0].type.dtype, [&](auto t) {
    using T = decltype(t);
    const T *x = call.in[0].as<T>();
    for (int64_t i = 0; i < n; ++i) {
      const double v = (double)x[i];
      if (!(v > -2147483649.0 && v < 2147483648.0)) {
        if (bad < 0) bad = i, badValue = v;
        y[i] = 0;
        continue;
      }
      y[i] = (int32_t)v;
    }
  });
  if (bad >= 0)
    fail("to_int: element %lld (of %lld) is %g, which is not an i32 value", (long long)bad, (long long)n,
         badValue);
}

std::string checkDropout(const std::vector<TensorType> &in, const std::vector<TensorType> &out, const Attrs &attrs) {
  return guardCheck("dropout", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("dropout", "x", in[0]));
    LMRT_CHECK(expectI32("dropout", "key", in[1]));
    LMRT_CHECK(shapes::dropoutRate(attrs.getFloat("p")));
    std::string err;
    std::optional<shapes::Dims> s = shapes::dropout(in[0].shape, in[1].shape, err);
    if (!s) return err;
    return expectType("dropout", "result", out[0], in[0].dtype, *s);
  });
}

/* Each row's elements in order of their flat index within the row; a row's
   stream is hashed once. In place (result over x) is safe: each element is
   read before it is written. */
void runDropout(const KernelCall &call) {
  const TensorRef &x = call.in[0];
  const int32_t *key = call.in[1].as<int32_t>();
  const double p = call.attrs.getFloat("p");
  const int64_t site = call.attrs.getInt("site");
  const int64_t rows = x.type.shape[0], n = rows ? x.numel() / rows : 0;
  const bool parts = call.in[1].shape().size() == 3;  // a part of each row (dropout_math.h)
  const uint32_t threshold = lmc::dropoutThreshold(p);
  dispatchFloat(x.type.dtype, [&](auto t) {
    using T = decltype(t);
    const T *in = x.as<T>();
    T *y = call.out[0].as<T>();
    const T scale = (T)(1.0 / (1.0 - p));
#pragma omp parallel for if (rows * n >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t stream = lmc::dropoutStream(key + 2 * r, site);
      const uint64_t base = lmc::dropoutPartBase(key, parts, rows, r, (uint64_t)n);
      for (int64_t i = 0; i < n; ++i)
        y[r * n + i] = in[r * n + i] * lmc::dropoutFactor<T>(stream, base + (uint64_t)i, threshold, scale);
    }
  });
}

}  // namespace

void addSampleKernels(std::vector<KernelDef> &k) {
  k.push_back({"sample", 2, 1, checkSample, runSample});
  k.push_back({"to_float", 1, 1, checkToFloat, runToFloat});
  k.push_back({"to_int", 1, 1, checkToInt, runToInt});
  k.push_back({"dropout", 2, 1, checkDropout, runDropout});
}

}  // namespace lmrt::kernels::detail

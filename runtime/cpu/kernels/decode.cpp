/* Implements: the data-movement ops of incremental decoding (docs/runtime.md,
   "Sampling"): lm.dynamic_slice (a slice at the run-time position offset: the
   position table rows of the new tokens) and lm.cache_write (new key or value
   rows into a cache). Both read the offset, an i32 scalar, and refuse one that
   leaves the tensor. cache_write may run in place: the plan writer gives its
   result the cache's own STATE buffer, and then only the new rows move. Any
   element type (f32, f64, i32) is moved as bytes. */
#include "runtime/cpu/kernels/kernel_common.h"

namespace lmrt::kernels::detail {
namespace {

int64_t elemBytes(DType t) { return t == DType::F64 ? 8 : 4; }

// ----------------------------------------------------------------------------
// dynamic_slice: (x, offset i32[]) -> x with dim `axis` = size, from offset + start

std::string checkDynamicSlice(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                              const Attrs &attrs) {
  return guardCheck("dynamic_slice", in, out, 2, 1, [&]() -> std::string {
    LMRT_CHECK(expectI32("dynamic_slice", "offset", in[1]));
    std::string err;
    auto s = shapes::dynamicSlice(in[0].shape, in[1].shape, attrs.getInt("axis"), attrs.getInt("start"),
                                  attrs.getInt("size"), err);
    if (!s) return err;
    return expectType("dynamic_slice", "out", out[0], in[0].dtype, *s);
  });
}

void runDynamicSlice(const KernelCall &call) {
  const Shape &xs = call.in[0].shape();
  const int64_t axis = call.attrs.getInt("axis"), size = call.attrs.getInt("size");
  const int64_t first = (int64_t)call.in[1].as<int32_t>()[0] + call.attrs.getInt("start");
  if (first < 0 || first > xs[axis] - size)
    fail("dynamic_slice: offset %d + start %lld selects positions [%lld, %lld) of dimension %lld, which has %lld",
         call.in[1].as<int32_t>()[0], (long long)call.attrs.getInt("start"), (long long)first,
         (long long)(first + size), (long long)axis, (long long)xs[axis]);
  int64_t outer = 1, inner = elemBytes(call.in[0].type.dtype);
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
  const char *x = static_cast<const char *>(call.in[0].data);
  char *y = static_cast<char *>(call.out[0].data);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(y + o * size * inner, x + (o * xs[axis] + first) * inner, (size_t)(size * inner));
}

// ----------------------------------------------------------------------------
// cache_write: (cache [B, W, D], x [B, C, D], offset i32[]) -> cache with rows offset .. offset+C-1 = x

std::string checkCacheWrite(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                            const Attrs &) {
  return guardCheck("cache_write", in, out, 3, 1, [&]() -> std::string {
    LMRT_CHECK(expectFloat("cache_write", "cache", in[0]));
    LMRT_CHECK(expectSameDType("cache_write", "x", in[1], "cache", in[0]));
    LMRT_CHECK(expectI32("cache_write", "offset", in[2]));
    std::string err;
    auto s = shapes::cacheWrite(in[0].shape, in[1].shape, in[2].shape, err);
    if (!s) return err;
    return expectType("cache_write", "out", out[0], in[0].dtype, *s);
  });
}

void runCacheWrite(const KernelCall &call) {
  const Shape &cs = call.in[0].shape(), &xs = call.in[1].shape();
  const int64_t B = cs[0], W = cs[1], C = xs[1], row = cs[2] * elemBytes(call.in[0].type.dtype);
  const int64_t offset = call.in[2].as<int32_t>()[0];
  if (offset < 0 || offset > W - C)
    fail("cache_write: offset %lld with %lld new positions leaves the cache of %lld positions (it must be in "
         "[0, %lld])", (long long)offset, (long long)C, (long long)W, (long long)(W - C));
  char *out = static_cast<char *>(call.out[0].data);
  // Not in place (a plan may still give the result its own buffer): start from the cache.
  if (call.out[0].data != call.in[0].data) std::memcpy(out, call.in[0].data, (size_t)(B * W * row));
  const char *x = static_cast<const char *>(call.in[1].data);
  for (int64_t b = 0; b < B; ++b)
    std::memcpy(out + (b * W + offset) * row, x + b * C * row, (size_t)(C * row));
}

}  // namespace

void addDecodeKernels(std::vector<KernelDef> &k) {
  k.push_back({"dynamic_slice", 2, 1, checkDynamicSlice, runDynamicSlice});
  k.push_back({"cache_write", 3, 1, checkCacheWrite, runCacheWrite});
}

}  // namespace lmrt::kernels::detail

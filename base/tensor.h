/* Implements: the runtime's view of a tensor (a typed pointer with a static shape)
   and the error type every runtime failure is reported with. No MLIR here. */
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace lmrt {

/* BF16 and F16 are storage types: kernels load them to f32 and compute in f32. */
enum class DType : uint8_t { F32, F64, I32, BF16, F16 };

inline size_t dtypeSize(DType t) {
  return t == DType::F64 ? 8 : t == DType::BF16 || t == DType::F16 ? 2 : 4;
}
inline const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::F64: return "f64";
  case DType::I32: return "i32";
  case DType::BF16: return "bf16";
  case DType::F16: return "f16";
  }
  return "?";
}

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
std::string shapeStr(const Shape &s);  // "[2, 3, 4]"

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  int64_t numel() const { return lmrt::numel(shape); }
  int64_t bytes() const { return numel() * (int64_t)dtypeSize(dtype); }
  std::string str() const;  // "f32[2, 3]"
};

struct TensorRef {
  void *data = nullptr;
  TensorType type;
  template <typename T> T *as() const { return static_cast<T *>(data); }
  const Shape &shape() const { return type.shape; }
  int64_t numel() const { return type.numel(); }
};

/* Every runtime failure (bad plan, bad data, bad flag, bad token id) is an Error
   carrying a message that says what and where; tools print it and exit non-zero. */
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace lmrt

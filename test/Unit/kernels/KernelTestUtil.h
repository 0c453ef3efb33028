/* Implements: helpers for the kernel tests: owned tensors, random data, running
   a kernel through the registry (check() first, outputs pre-filled with NaN so a
   kernel that skips an element is caught), and central finite differences. */
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "runtime/cpu/kernels/registry.h"
#include "contract/scalar_math.h"
#include "contract/shape_rules.h"

namespace lmrt::kernels::test {

/* A tensor that owns its bytes; values are read and written as double. */
struct Buf {
  TensorType type;
  std::vector<uint64_t> words;  // 8-byte aligned storage

  Buf() = default;
  Buf(DType dt, Shape s) : type{dt, std::move(s)}, words((type.bytes() + 7) / 8 + 1, 0) {}
  int64_t numel() const { return type.numel(); }
  void *data() { return words.data(); }
  const void *data() const { return words.data(); }
  TensorRef ref() { return TensorRef{data(), type}; }
  double get(int64_t i) const {
    switch (type.dtype) {
    case DType::F32: return static_cast<const float *>(data())[i];
    case DType::F64: return static_cast<const double *>(data())[i];
    case DType::BF16: return lmc::toFloat(static_cast<const lmc::bf16 *>(data())[i]);
    case DType::F16: return lmc::toFloat(static_cast<const lmc::f16 *>(data())[i]);
    default: return static_cast<const int32_t *>(data())[i];
    }
  }
  void set(int64_t i, double v) {
    switch (type.dtype) {
    case DType::F32: static_cast<float *>(data())[i] = (float)v; break;
    case DType::F64: static_cast<double *>(data())[i] = v; break;
    case DType::BF16: static_cast<lmc::bf16 *>(data())[i] = lmc::fromFloat<lmc::bf16>((float)v); break;
    case DType::F16: static_cast<lmc::f16 *>(data())[i] = lmc::fromFloat<lmc::f16>((float)v); break;
    default: static_cast<int32_t *>(data())[i] = (int32_t)v; break;
    }
  }
  /* The same values in another element type. */
  Buf as(DType dt) const {
    Buf b(dt, type.shape);
    for (int64_t i = 0; i < numel(); ++i) b.set(i, get(i));
    return b;
  }
};

inline std::mt19937 &rng() {
  static std::mt19937 g(1234);
  return g;
}

inline Buf randn(Shape s, DType dt = DType::F64, double scale = 1.0) {
  Buf b(dt, std::move(s));
  std::normal_distribution<double> n(0.0, scale);
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, n(rng()));
  return b;
}

inline Buf randIds(Shape s, int64_t vocab) {
  Buf b(DType::I32, std::move(s));
  std::uniform_int_distribution<int64_t> u(0, vocab - 1);
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, (double)u(rng()));
  return b;
}

inline Buf scalar(double v, DType dt = DType::F64) {
  Buf b(dt, {});
  b.set(0, v);
  return b;
}

inline std::vector<TensorType> typesOf(const std::vector<Buf> &bs) {
  std::vector<TensorType> t;
  for (auto &b : bs) t.push_back(b.type);
  return t;
}

/* `attrs` with the ODS default of every attribute of `op` it leaves out, as
   decodeAttrs gives a kernel a plan step's: kernels state no defaults. */
inline Attrs withDefaults(const std::string &op, Attrs attrs = Attrs()) {
  addOpDefaults(op, attrs);
  return attrs;
}

/* Message of the kernel's check() for these operand and result types. */
inline std::string checkMsg(const std::string &op, const std::vector<TensorType> &in,
                            const std::vector<TensorType> &out, const Attrs &given = Attrs()) {
  const KernelDef *k = findKernel(op);
  if (!k) return "no kernel " + op;
  return k->check(in, out, withDefaults(op, given));
}

/* Runs kernel `op` on `in`, producing outputs of the given types; fails the test if check() rejects. */
inline std::vector<Buf> runKernel(const std::string &op, std::vector<Buf> in, const std::vector<TensorType> &outTypes,
                                  const Attrs &given = Attrs()) {
  const KernelDef *k = findKernel(op);
  EXPECT_NE(k, nullptr) << op;
  if (!k) return {};
  const Attrs attrs = withDefaults(op, given);
  std::string err = k->check(typesOf(in), outTypes, attrs);
  EXPECT_EQ(err, "") << op;
  std::vector<Buf> out;
  for (auto &t : outTypes) {
    out.emplace_back(t.dtype, t.shape);
    if (t.dtype != DType::I32)
      for (int64_t i = 0; i < out.back().numel(); ++i) out.back().set(i, NAN);
  }
  if (!err.empty()) return out;
  KernelCall call{{}, {}, attrs};
  for (auto &b : in) call.in.push_back(b.ref());
  for (auto &b : out) call.out.push_back(b.ref());
  k->run(call);
  return out;
}

/* Max |a - b| / (atol + rtol |b|) over elements; <= 1 means close. */
inline ::testing::AssertionResult allClose(const Buf &a, const Buf &b, double rtol, double atol) {
  if (a.type.shape != b.type.shape)
    return ::testing::AssertionFailure() << "shapes differ: " << a.type.str() << " vs " << b.type.str();
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y)))
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y << " (of " << a.numel()
                                           << ")";
  }
  return ::testing::AssertionSuccess();
}

/* d(Σ f(inputs)[0] ⊙ dy)/d inputs[which] by central differences, in double. */
inline Buf finiteDiff(const std::function<Buf(const std::vector<Buf> &)> &f, std::vector<Buf> inputs, size_t which,
                      const Buf &dy, double h = 1e-6) {
  Buf g(DType::F64, inputs[which].type.shape);
  auto objective = [&]() {
    Buf y = f(inputs);
    double s = 0;
    for (int64_t i = 0; i < y.numel(); ++i) s += y.get(i) * dy.get(i);
    return s;
  };
  for (int64_t i = 0; i < g.numel(); ++i) {
    double x0 = inputs[which].get(i);
    inputs[which].set(i, x0 + h);
    double up = objective();
    inputs[which].set(i, x0 - h);
    double down = objective();
    inputs[which].set(i, x0);
    g.set(i, (up - down) / (2 * h));
  }
  return g;
}

inline Attrs attrs(std::initializer_list<std::pair<const char *, Attrs::Value>> kv) {
  Attrs a;
  for (auto &[k, v] : kv) a.set(k, v);
  return a;
}

}  // namespace lmrt::kernels::test

/* Implements: a kernel lab benchmark (not in the default build): times each
   kernel of one GPT training step at a given size through the registry.
   Build: cmake -DLMRT_KERNEL_LAB=ON, ninja bench_kernels.
   Usage: bench_kernels [B T C H V [reps]]  (default: gpt_tiny, 12 64 128 4 256);
   BENCH_ONLY=attention times only kernels whose label contains that text.
   CPU ms (process CPU time, with OMP_WAIT_POLICY=passive) stays meaningful on a loaded machine. */
#include <chrono>
#include <cstring>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "runtime/cpu/kernels/registry.h"

using namespace lmrt;
using namespace lmrt::kernels;

namespace {

int reps = 20;

struct Owned {
  TensorType type;
  std::vector<float> data;
  explicit Owned(TensorType t, bool ids = false, int64_t vocab = 1) : type(std::move(t)), data(type.numel() + 1) {
    std::mt19937 g(7);
    std::normal_distribution<float> n(0, 1);
    for (auto &x : data) x = n(g);
    if (ids) {
      int32_t *p = reinterpret_cast<int32_t *>(data.data());
      for (int64_t i = 0; i < type.numel(); ++i) p[i] = (int32_t)(g() % vocab);
    }
  }
  TensorRef ref() { return {data.data(), type}; }
};

void bench(const char *label, const char *op, std::vector<TensorType> in, std::vector<TensorType> out, Attrs a,
           int64_t vocab = 1) {
  if (const char *only = std::getenv("BENCH_ONLY"); only && !std::strstr(label, only)) return;
  const KernelDef *k = findKernel(op);
  addOpDefaults(op, a);  // as decodeAttrs does for a plan step: kernels state no defaults
  std::string err = k->check(in, out, a);
  if (!err.empty()) {
    std::printf("%s: %s\n", label, err.c_str());
    std::exit(1);
  }
  std::vector<Owned> ins, outs;
  for (auto &t : in) ins.emplace_back(t, t.dtype == DType::I32, vocab);
  for (auto &t : out) outs.emplace_back(t);
  KernelCall call{{}, {}, a};
  for (auto &o : ins) call.in.push_back(o.ref());
  for (auto &o : outs) call.out.push_back(o.ref());
  k->run(call);  // warm up
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  for (int i = 0; i < reps; ++i) k->run(call);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
  double cpuMs = 1e3 * double(std::clock() - c0) / CLOCKS_PER_SEC / reps;
  std::printf("%-28s %9.3f ms  %9.3f CPU ms\n", label, ms, cpuMs);
}

}  // namespace

int main(int argc, char **argv) {
  int64_t B = 12, T = 64, C = 128, H = 4, V = 256;
  if (argc >= 6) B = atoll(argv[1]), T = atoll(argv[2]), C = atoll(argv[3]), H = atoll(argv[4]), V = atoll(argv[5]);
  if (argc >= 7) reps = atoi(argv[6]);
  const DType F = DType::F32;
  TensorType x{F, {B, T, C}}, x4{F, {B, T, 4 * C}}, lg{F, {B, T, V}};
  Attrs none, att;
  att.set("num_heads", H);
  att.set("causal", true);
  Attrs tr;
  tr.set("transpose_rhs", true);
  Attrs tl;
  tl.set("transpose_lhs", true);
  bench("embedding", "embedding", {{F, {V, C}}, {DType::I32, {B, T}}}, {x}, none, V);
  bench("embedding_grad", "embedding_grad", {{DType::I32, {B, T}}, x}, {{F, {V, C}}}, none, V);
  bench("layer_norm", "layer_norm", {x, {F, {C}}, {F, {C}}}, {x}, none);
  bench("layer_norm_grad", "layer_norm_grad", {x, {F, {C}}, x}, {x, {F, {C}}, {F, {C}}}, none);
  bench("matmul x@w1 [BT,C]x[C,4C]", "matmul", {x, {F, {C, 4 * C}}}, {x4}, none);
  bench("matmul dx = dy@w1^T", "matmul", {x4, {F, {C, 4 * C}}}, {x}, tr);
  bench("matmul dW batched", "matmul", {x, x4}, {{F, {B, C, 4 * C}}}, tl);
  bench("matmul dW flat", "matmul", {{F, {B * T, C}}, {F, {B * T, 4 * C}}}, {{F, {C, 4 * C}}}, tl);
  bench("sum_to dW batched", "sum_to", {{F, {B, C, 4 * C}}}, {{F, {C, 4 * C}}}, none);
  bench("add bias", "add", {x4, {F, {4 * C}}}, {x4}, none);
  bench("add residual", "add", {x, x}, {x}, none);
  bench("sum_to bias grad", "sum_to", {x4}, {{F, {4 * C}}}, none);
  bench("gelu", "gelu", {x4}, {x4}, none);
  bench("gelu_grad", "gelu_grad", {x4, x4}, {x4}, none);
  bench("attention", "attention", {x, x, x}, {x}, att);
  bench("attention_grad", "attention_grad", {x, x, x, x}, {x, x, x}, att);
  Attrs sl;
  sl.set("start", std::vector<int64_t>{0, 0, C});
  sl.set("limit", std::vector<int64_t>{B, T, 2 * C});
  sl.set("stride", std::vector<int64_t>{1, 1, 1});
  bench("slice qkv", "slice", {{F, {B, T, 3 * C}}}, {x}, sl);
  bench("slice_grad qkv", "slice_grad", {x}, {{F, {B, T, 3 * C}}}, sl);
  Attrs tp;
  tp.set("permutation", std::vector<int64_t>{1, 0});
  bench("transpose wte", "transpose", {{F, {V, C}}}, {{F, {C, V}}}, tp);
  bench("matmul logits", "matmul", {x, {F, {C, V}}}, {lg}, none);
  bench("cross_entropy", "cross_entropy", {lg, {DType::I32, {B, T}}}, {{F, {}}}, none, V);
  bench("cross_entropy_grad", "cross_entropy_grad", {lg, {DType::I32, {B, T}}, {F, {}}}, {lg}, none, V);
  return 0;
}

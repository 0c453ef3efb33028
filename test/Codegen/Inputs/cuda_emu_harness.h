/* The driver of test/Codegen/kernels-cuda-emulated.test: runs each generated CUDA
   kernel of a plan on the CPU emulation of CUDA (test/Unit/cuda_emu/emulation.h),
   launched as runtime/cuda/generated.cpp launches it, and the same kernel's CPU
   entry from the plan's CPU library (lmrt's own bits), on the same inputs, and
   compares every result. emulate_cuda_kernels.py writes the translation unit that
   includes emulation.h, the plan's kernels.cu, this header, and one KernelSpec per
   kernel (from the plan's text).

   What must agree: every element a kernel writes point by point (elementwise
   results, GEMM epilogues, the per-point results of a column reduction), bf16 and
   f16 stores included, byte for byte: the emulation compiles the CUDA source with
   the CPU library's flags, so the comparison isolates what is CUDA's own (the grid-
   stride wrappers' indexing, the storage types' loads and stores, the two-pass
   column reduction) from the compilers' freedom to contract a * b + c. A column
   reduction's sums (bias gradients) are added in another order on CUDA (8 lanes,
   then row chunks: generated.cpp; the CPU entry runs here as one tile of every row,
   in row order), so they agree to rows * 1e-6 of the largest column
   sum instead. Inputs: N(0, 1), with every 7th f32 value a tie between two
   bf16 numbers and every 11th a tie between two f16 numbers (round to nearest even
   decides them), and i32 values in [0, 8). The outputs start as different NaN
   patterns on the two sides, so an element one side forgets to write differs. */
#pragma once
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace emu_harness {

enum Schedule { Elementwise, MatmulEpilogue, ColumnReduce };
enum Type { F32, F64, I32, BF16, F16 };

struct Arg {
  Type type;
  int64_t numel;
};

struct KernelSpec {
  const char *name;
  Schedule schedule;
  int64_t rows, cols;
  int numInputs;
  int productArg;  // MATMUL_EPILOGUE: the GEMM's result, which the harness fills as an input
  std::vector<Arg> args;
  void (*launch)(void **p);  // the emulated CUDA launch (generated)
};

inline size_t sizeOf(Type t) { return t == F64 ? 8 : t == BF16 || t == F16 ? 2 : 4; }

inline float tieOf(float x, uint32_t bit) {  // x with the bits below `bit`'s place cleared and `bit` set
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u & ~(2 * bit - 1)) | bit;
  std::memcpy(&x, &u, 4);
  return x;
}

inline void fill(std::vector<unsigned char> &b, Type t, int64_t n, std::mt19937 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    float x = normal(rng);
    if (i % 7 == 3) x = tieOf(x, 0x8000u);   // halfway between two bf16 numbers
    if (i % 11 == 5) x = tieOf(x, 0x1000u);  // halfway between two f16 numbers
    void *p = b.data() + i * sizeOf(t);
    switch (t) {
    case F32: std::memcpy(p, &x, 4); break;
    case F64: { double d = x; std::memcpy(p, &d, 8); break; }
    case I32: { int32_t v = (int32_t)(rng() % 8); std::memcpy(p, &v, 4); break; }
    case BF16: { lmc::bf16 v = lmc::fromFloat<lmc::bf16>(x); std::memcpy(p, &v, 2); break; }
    case F16: { lmc::f16 v = lmc::fromFloat<lmc::f16>(x); std::memcpy(p, &v, 2); break; }
    }
  }
}

inline double valueAt(const std::vector<unsigned char> &b, Type t, int64_t i) {
  const unsigned char *p = b.data() + i * sizeOf(t);
  switch (t) {
  case F32: { float v; std::memcpy(&v, p, 4); return v; }
  case F64: { double v; std::memcpy(&v, p, 8); return v; }
  case I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case BF16: { lmc::bf16 v; std::memcpy(&v, p, 2); return lmc::load(v); }
  case F16: { lmc::f16 v; std::memcpy(&v, p, 2); return lmc::load(v); }
  }
  return 0;
}

struct Totals {
  int kernels = 0, failures = 0, reducedOutputs = 0;
  int64_t exactElements = 0, reducedElements = 0, sums = 0;
};

/* Runs one kernel both ways; prints a line per mismatch (the first few). */
inline void runKernel(void *cpuLib, const KernelSpec &k, Totals &tot) {
  using CpuEntry = void (*)(void *const *, int64_t, int64_t);
  using CpuReduce = void (*)(void *const *, int64_t, int64_t, int64_t, int64_t, void *, int64_t);
  void *entry = dlsym(cpuLib, k.name);
  auto cpuEntry = reinterpret_cast<CpuEntry>(entry);
  if (!entry) {
    std::printf("FAIL %s: not in the CPU library\n", k.name);
    ++tot.failures;
    return;
  }
  std::mt19937 rng(12345);
  std::vector<std::vector<unsigned char>> cpu(k.args.size()), gpu(k.args.size());
  for (size_t i = 0; i < k.args.size(); ++i) {
    const Arg &a = k.args[i];
    cpu[i].assign((size_t)a.numel * sizeOf(a.type) + 8, 0xfe);
    gpu[i].assign(cpu[i].size(), 0xff);
    if ((int)i < k.numInputs || (int)i == k.productArg) {
      fill(cpu[i], a.type, a.numel, rng);
      gpu[i] = cpu[i];
    }
  }
  std::vector<void *> pc, pg;
  for (size_t i = 0; i < k.args.size(); ++i) pc.push_back(cpu[i].data()), pg.push_back(gpu[i].data());
  if (k.schedule == ColumnReduce)  // one tile of every row: the sums stored as the results
    reinterpret_cast<CpuReduce>(entry)(pc.data(), 0, k.rows, 0, k.cols, nullptr, 0);
  else
    cpuEntry(pc.data(), 0, k.rows * k.cols);
  k.launch(pg.data());
  ++tot.kernels;
  int misses = 0;
  for (size_t i = (size_t)k.numInputs; i < k.args.size(); ++i) {
    const Arg &a = k.args[i];
    const bool sum = k.schedule == ColumnReduce && a.numel == k.cols && k.rows > 1;
    if (a.type == BF16 || a.type == F16) ++tot.reducedOutputs, tot.reducedElements += a.numel;
    if (!sum) {
      tot.exactElements += a.numel;
      for (int64_t e = 0; e < a.numel; ++e)
        if (std::memcmp(cpu[i].data() + e * sizeOf(a.type), gpu[i].data() + e * sizeOf(a.type), sizeOf(a.type)) &&
            ++misses <= 5)
          std::printf("FAIL %s: result %zu element %lld: cpu %.9g, emulated cuda %.9g (not the same bytes)\n", k.name,
                      i, (long long)e, valueAt(cpu[i], a.type, e), valueAt(gpu[i], a.type, e));
      continue;
    }
    ++tot.sums;
    // Two orders of `rows` f32 additions differ by at most about rows * 2^-24 times
    // the sum of the magnitudes; the largest column sum stands in for that scale.
    double scale = 1;
    for (int64_t e = 0; e < a.numel; ++e) scale = std::max(scale, std::fabs(valueAt(cpu[i], a.type, e)));
    const double tol = 1e-6 * (double)k.rows * scale;
    for (int64_t e = 0; e < a.numel; ++e) {
      const double c = valueAt(cpu[i], a.type, e), g = valueAt(gpu[i], a.type, e);
      if (!(std::fabs(c - g) <= tol) && ++misses <= 5)
        std::printf("FAIL %s: sum %zu column %lld: cpu %.9g, emulated cuda %.9g (tolerance %.3g)\n", k.name, i,
                    (long long)e, c, g, tol);
    }
  }
  if (misses) ++tot.failures;
}

inline int runAll(const char *cpuLibPath, const std::vector<KernelSpec> &kernels) {
  void *lib = dlopen(cpuLibPath, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::printf("cannot load the CPU library %s: %s\n", cpuLibPath, dlerror());
    return 1;
  }
  Totals tot;
  int bySchedule[3] = {0, 0, 0};
  for (const KernelSpec &k : kernels) runKernel(lib, k, tot), ++bySchedule[k.schedule];
  std::printf("emulated %d kernels (%d elementwise, %d epilogues, %d column reductions): %lld elements "
              "compared byte for byte, %d bf16/f16 results (%lld elements), %d column sums; %d failed\n",
              tot.kernels, bySchedule[Elementwise], bySchedule[MatmulEpilogue], bySchedule[ColumnReduce],
              (long long)tot.exactElements, tot.reducedOutputs, (long long)tot.reducedElements, tot.sums,
              tot.failures);
  return tot.failures ? 1 : 0;
}

}  // namespace emu_harness

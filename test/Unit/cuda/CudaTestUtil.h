/* Implements: the harness of the CUDA kernel tests: a case (op, operand and
   result types, attributes) is checked with the CPU kernel table's check() and
   run by the CPU kernel first, on every machine; then, where a GPU is present,
   the CUDA kernel runs on the same inputs and every result is compared:
     f32: |gpu - cpu| <= 1e-4 |cpu| + 1e-5 max|cpu|   (f64: 1e-10 and 1e-12)
   Without a GPU the GPU half skips, visibly, with the reason. */
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/cuda/device.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/ops.h"
#include "runtime/cpu/kernels/registry.h"
#include "contract/scalar_math.h"

namespace lmrt::cuda::test {

/* The GPU of the tests, opened once; "" or why there is none. */
inline const std::string &gpuUnavailable() {
  static const std::string why = [] {
    std::string r = unavailableReason();
    if (r.empty()) openDevice(0);
    return r;
  }();
  return why;
}

#define LMRT_REQUIRE_GPU()                                                              \
  do {                                                                                  \
    if (!::lmrt::cuda::test::gpuUnavailable().empty())                                  \
      GTEST_SKIP() << "no CUDA GPU: " << ::lmrt::cuda::test::gpuUnavailable();           \
  } while (0)

struct HostTensor {
  TensorType type;
  std::vector<double> storage;  // 8-byte aligned bytes
  explicit HostTensor(TensorType t) : type(std::move(t)), storage((size_t)(type.bytes() + 7) / 8 + 1, 0.0) {}
  void *data() { return storage.data(); }
  TensorRef ref() { return TensorRef{data(), type}; }
  double at(int64_t i) const {
    const void *p = storage.data();
    if (type.dtype == DType::F64) return static_cast<const double *>(p)[i];
    if (type.dtype == DType::F32) return static_cast<const float *>(p)[i];
    if (type.dtype == DType::BF16) return lmc::load(static_cast<const lmc::bf16 *>(p)[i]);
    if (type.dtype == DType::F16) return lmc::load(static_cast<const lmc::f16 *>(p)[i]);
    return static_cast<const int32_t *>(p)[i];
  }
};

/* Inputs: floats ~ N(0, 1) (|N(0, 1)| + 0.1 when `positive`: log, sqrt, rsqrt); i32 ids
   uniform in [0, idRange), every `ignoreEvery`-th -100 when > 0. */
inline void fillInputs(std::vector<HostTensor> &in, int64_t idRange, int ignoreEvery, uint32_t seed,
                       bool positive = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto draw = [&]() { return positive ? std::fabs(normal(rng)) + 0.1 : normal(rng); };
  for (HostTensor &t : in)
    for (int64_t i = 0; i < t.type.numel(); ++i) {
      if (t.type.dtype == DType::F32) static_cast<float *>(t.data())[i] = (float)draw();
      if (t.type.dtype == DType::F64) static_cast<double *>(t.data())[i] = draw();
      if (t.type.dtype == DType::BF16) static_cast<lmc::bf16 *>(t.data())[i] = lmc::fromFloat<lmc::bf16>((float)draw());
      if (t.type.dtype == DType::F16) static_cast<lmc::f16 *>(t.data())[i] = lmc::fromFloat<lmc::f16>((float)draw());
      if (t.type.dtype == DType::I32)
        static_cast<int32_t *>(t.data())[i] =
            ignoreEvery > 0 && i % ignoreEvery == ignoreEvery - 1 ? -100 : (int32_t)(rng() % (uint32_t)idRange);
    }
}

/* |gpu - cpu| <= rtol |cpu| + atol max|cpu| for every element; reports the first few
   misses. TF32: 5e-3 and 1e-3 (inputs of two chained products rounded to 11
   significant bits; test/Unit/cuda_emu/AttentionEmulationTest.cpp measures it).
   `rounded` (a kernel rounds an intermediate to bf16 / f16 before a GEMM, as the
   fused loss's gradient): 4e-3 and 1e-3, since an f32 value that differs in its
   last bit may round to the neighbouring bf16 (a 2^-8 step) on one side only.
   `low` (BF16, F16: the f32 attention of a bf16 / fp16 plan on 16-bit tensor cores,
   every product's operands rounded to 8 / 11 significant bits): 2e-2 and 1e-2, 5e-3
   and 3e-3 (AttentionEmulationTest measures them). */
inline void expectClose(const HostTensor &cpu, const HostTensor &gpu, const std::string &what, bool tf32 = false,
                        bool rounded = false, DType low = DType::F32) {
  const bool f64 = cpu.type.dtype == DType::F64, bf = low == DType::BF16, hf = low == DType::F16;
  const double rtol = f64 ? 1e-10 : bf ? 2e-2 : hf ? 5e-3 : tf32 ? 5e-3 : rounded ? 4e-3 : 1e-4,
               atolScale = f64 ? 1e-12 : bf ? 1e-2 : hf ? 3e-3 : tf32 ? 1e-3 : rounded ? 1e-3 : 1e-5;
  double maxAbs = 0;
  for (int64_t i = 0; i < cpu.type.numel(); ++i) maxAbs = std::max(maxAbs, std::fabs(cpu.at(i)));
  int misses = 0;
  for (int64_t i = 0; i < cpu.type.numel(); ++i) {
    const double c = cpu.at(i), g = gpu.at(i);
    if (std::fabs(g - c) <= rtol * std::fabs(c) + atolScale * maxAbs) continue;
    if (++misses <= 5) ADD_FAILURE() << what << " element " << i << ": gpu " << g << ", cpu " << c;
  }
  EXPECT_EQ(misses, 0) << what << ": " << misses << " of " << cpu.type.numel() << " elements differ";
}

struct OpCase {
  std::string op;
  std::vector<TensorType> in, out;
  kernels::Attrs attrs;
  int64_t idRange = 1;
  int ignoreEvery = 0;
  bool positive = false;
  int paddingMask = -1;  // >= 0: that float input [B, Tk] is a 0/1 key padding mask
  bool tf32 = false;     // the GPU half runs with TF32 GEMMs (and attention on tensor cores)
  bool exact = false;    // the results must be the CPU's bytes (casts: both round to nearest even)
  bool rounded = false;  // an intermediate is rounded to bf16 / f16 (expectClose)
  DType lowPrecision = DType::F32;  // BF16 / F16: the GPU half runs as in a bf16 / fp16 plan (OpCall::lowPrecision)
  std::vector<std::pair<int, double>> fill;  // (input, value): every element of that float input is the value
};

/* A key padding mask [B, Tk] in place of random floats: row b keeps its first
   (b + 1) * Tk / (B + 1) keys (the rest padding; 0 of them in row 0 when Tk < B + 1),
   and the last row has every key masked (a row of queries with nothing to see). */
inline void fillPaddingMask(HostTensor &t) {
  const int64_t B = t.type.shape[0], Tk = t.type.shape[1];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < Tk; ++j) {
      const double m = b + 1 < B && j < (b + 1) * Tk / (B + 1) ? 1.0 : 0.0;
      if (t.type.dtype == DType::F32) static_cast<float *>(t.data())[b * Tk + j] = (float)m;
      if (t.type.dtype == DType::F64) static_cast<double *>(t.data())[b * Tk + j] = m;
    }
}

/* Runs the case on the CPU (checked) and, with a GPU, on the GPU, and compares.
   The case's attributes get the ODS defaults of those it leaves out, as
   decodeAttrs gives them to a plan step: kernels state no defaults. */
inline void runCase(const OpCase &c, uint32_t seed = 1) {
  SCOPED_TRACE(c.op);
  const kernels::KernelDef *cpu = kernels::findKernel(c.op);
  ASSERT_NE(cpu, nullptr);
  kernels::Attrs attrs = c.attrs;
  kernels::addOpDefaults(c.op, attrs);
  ASSERT_EQ(cpu->check(c.in, c.out, attrs), "");
  std::vector<HostTensor> in, outCpu, outGpu;
  for (const TensorType &t : c.in) in.emplace_back(t);
  for (const TensorType &t : c.out) outCpu.emplace_back(t), outGpu.emplace_back(t);
  fillInputs(in, c.idRange, c.ignoreEvery, seed, c.positive);
  if (c.paddingMask >= 0) fillPaddingMask(in[c.paddingMask]);
  for (const auto &[k, value] : c.fill)
    for (int64_t i = 0; i < in[k].type.numel(); ++i) {
      if (in[k].type.dtype == DType::F32) static_cast<float *>(in[k].data())[i] = (float)value;
      if (in[k].type.dtype == DType::F64) static_cast<double *>(in[k].data())[i] = value;
    }
  kernels::KernelCall call{{}, {}, attrs};
  for (HostTensor &t : in) call.in.push_back(t.ref());
  for (HostTensor &t : outCpu) call.out.push_back(t.ref());
  cpu->run(call);

  LMRT_REQUIRE_GPU();
  const CudaKernelDef *gpu = findCudaKernel(c.op);
  ASSERT_NE(gpu, nullptr);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  {
    Gemm gemm(stream, c.tf32);
    DeviceBuffer scratch(std::max<size_t>(256, gpu->scratchBytes(c.in, c.out, attrs)), "test scratch");
    std::vector<DeviceBuffer> dIn, dOut;
    OpCall g{{}, {}, attrs, stream, scratch.get(), gemm, c.lowPrecision};
    for (HostTensor &t : in) {
      dIn.emplace_back(std::max<int64_t>(t.type.bytes(), 8), "test input");
      ASSERT_EQ(cudaMemcpy(dIn.back().get(), t.data(), t.type.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      g.in.push_back({dIn.back().get(), t.type});
    }
    for (HostTensor &t : outGpu) {
      dOut.emplace_back(std::max<int64_t>(t.type.bytes(), 8), "test output");
      // NaN-filled: an element the kernel forgets to write cannot pass.
      ASSERT_EQ(cudaMemset(dOut.back().get(), 0xff, t.type.bytes()), cudaSuccess);
      g.out.push_back({dOut.back().get(), t.type});
    }
    gpu->run(g);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    for (size_t i = 0; i < outGpu.size(); ++i) {
      ASSERT_EQ(cudaMemcpy(outGpu[i].data(), dOut[i].get(), outGpu[i].type.bytes(), cudaMemcpyDeviceToHost),
                cudaSuccess);
      if (c.exact)
        EXPECT_EQ(std::memcmp(outCpu[i].data(), outGpu[i].data(), (size_t)outGpu[i].type.bytes()), 0)
            << c.op << " result " << i << ": not the CPU's bytes";
      else
        expectClose(outCpu[i], outGpu[i], c.op + " result " + std::to_string(i), c.tf32, c.rounded,
                    c.lowPrecision);
    }
  }
  cudaStreamDestroy(stream);
}

inline TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }
inline TensorType f64(Shape s) { return {DType::F64, std::move(s)}; }
inline TensorType i32(Shape s) { return {DType::I32, std::move(s)}; }
inline TensorType bf16(Shape s) { return {DType::BF16, std::move(s)}; }
inline TensorType f16(Shape s) { return {DType::F16, std::move(s)}; }

}  // namespace lmrt::cuda::test

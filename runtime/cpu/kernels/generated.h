/* Implements: running the kernels lmc generates from fused regions (docs/fusion.md)
   on the CPU. A generated kernel is compiled code with a C entry point that
   computes the points [begin, end) of its iteration space on the calling
   thread; this file owns how those ranges are spread over the OpenMP threads
   (and, for an epilogue, the library GEMM that comes first). */
#pragma once
#include <cstdint>
#include <vector>

#include "base/tensor.h"

namespace lmrt::kernels {

/* The C ABI of a generated CPU kernel: args are the step's inputs then outputs. */
using GeneratedFn = void (*)(void *const *args, int64_t begin, int64_t end);

struct GeneratedKernel {
  enum class Schedule { Elementwise, ColumnReduce, MatmulEpilogue };
  Schedule schedule = Schedule::Elementwise;
  int64_t rows = 1, cols = 1;
  /* MatmulEpilogue: args[product] = args[lhs] (rows x K) times args[rhs] (K x cols, or
     cols x K with transposeRhs), computed before the kernel reads it. */
  int product = -1, lhs = -1, rhs = -1;
  bool transposeRhs = false;
  GeneratedFn fn = nullptr;
};

/* "elementwise", "column_reduce", "matmul_epilogue" (profiles and messages). */
const char *scheduleName(GeneratedKernel::Schedule schedule);

/* Runs `k` on `args` (inputs then outputs, the types the kernel was compiled for). */
void runGenerated(const GeneratedKernel &k, const std::vector<TensorRef> &args);

}  // namespace lmrt::kernels

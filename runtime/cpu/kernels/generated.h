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

/* The C ABI of a generated CPU kernel: args are the step's inputs then outputs.
   Elementwise and epilogue kernels compute the flat points [begin, end). */
using GeneratedFn = void (*)(void *const *args, int64_t begin, int64_t end);
/* A column reduce computes the tile rows [r0, r1) x columns [c0, c1): with part null
   it stores the column sums as the results (the tile holds every row), else row chunk
   `chunk`'s partial sums into part; its NAME_combine adds the partial sums of `chunks`
   chunks in chunk order and stores the results (column_sum.h has the order). */
using ColumnReduceFn = void (*)(void *const *args, int64_t r0, int64_t r1, int64_t c0, int64_t c1, void *part,
                                int64_t chunk);
using ColumnCombineFn = void (*)(void *const *args, int64_t c0, int64_t c1, const void *part, int64_t chunks);

struct GeneratedKernel {
  enum class Schedule { Elementwise, ColumnReduce, MatmulEpilogue };
  Schedule schedule = Schedule::Elementwise;
  int64_t rows = 1, cols = 1;
  /* MatmulEpilogue: args[product] = args[lhs] (rows x K) times args[rhs] (K x cols, or
     cols x K with transposeRhs), computed before the kernel reads it. */
  int product = -1, lhs = -1, rhs = -1;
  bool transposeRhs = false;
  GeneratedFn fn = nullptr;  // Elementwise, MatmulEpilogue
  ColumnReduceFn reduce = nullptr;  // ColumnReduce: the tile entry (the kernel's name) and NAME_combine
  ColumnCombineFn combine = nullptr;
  int outputs = 0;  // results (bounds a column reduce's partial sums: 8 bytes a column per result and chunk)
};

/* "elementwise", "column_reduce", "matmul_epilogue" (profiles and messages). */
const char *scheduleName(GeneratedKernel::Schedule schedule);

/* Runs `k` on `args` (inputs then outputs, the types the kernel was compiled for). */
void runGenerated(const GeneratedKernel &k, const std::vector<TensorRef> &args);

}  // namespace lmrt::kernels

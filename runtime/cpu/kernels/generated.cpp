/* Implements: the CPU schedules of generated kernels (generated.h). Each thread
   gets one contiguous range, so every point is computed by exactly one thread, and
   column sums add in the order of column_sum.h: results depend neither on timing
   nor on the thread count. */
#include "runtime/cpu/kernels/generated.h"

#include <omp.h>

#include "runtime/cpu/kernels/column_sum.h"
#include "runtime/cpu/kernels/kernel_common.h"

namespace lmrt::kernels {
namespace {

/* Splits [0, n) into one range per thread, each a multiple of `grain` long
   (but the last), and calls f(begin, end) on each; one thread when `work`
   (the elements the whole call touches) is too little to share. */
template <typename F> void parallelRanges(int64_t n, int64_t grain, int64_t work, F &&f) {
  int nt = work >= detail::kParallelMin && n >= 2 * grain ? omp_get_max_threads() : 1;
  if (nt <= 1) {
    f(int64_t{0}, n);
    return;
  }
  int64_t per = (n + nt - 1) / nt;
  per = (per + grain - 1) / grain * grain;
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int t = 0; t < nt; ++t) {
    int64_t b = std::min<int64_t>(n, t * per), e = std::min<int64_t>(n, b + per);
    if (b < e) f(b, e);
  }
}

}  // namespace

const char *scheduleName(GeneratedKernel::Schedule schedule) {
  switch (schedule) {
  case GeneratedKernel::Schedule::Elementwise: return "elementwise";
  case GeneratedKernel::Schedule::ColumnReduce: return "column_reduce";
  case GeneratedKernel::Schedule::MatmulEpilogue: return "matmul_epilogue";
  }
  return "?";
}

void runGenerated(const GeneratedKernel &k, const std::vector<TensorRef> &args) {
  std::vector<void *> p(args.size());
  for (size_t i = 0; i < args.size(); ++i) p[i] = args[i].data;
  void *const *argv = p.data();
  switch (k.schedule) {
  case GeneratedKernel::Schedule::Elementwise:
    parallelRanges(k.rows * k.cols, 16, k.rows * k.cols, [&](int64_t b, int64_t e) { k.fn(argv, b, e); });
    return;
  case GeneratedKernel::Schedule::ColumnReduce: {
    // Partial sums of every row chunk: 8 bytes (the widest accumulator) a column per
    // result, kept per calling thread between calls (none with one chunk: the tile
    // stores the results).
    thread_local std::vector<double> part;
    const int64_t chunks = detail::columnChunks(k.rows).chunks;
    const size_t need = chunks > 1 ? (size_t)chunks * (size_t)k.outputs * (size_t)k.cols : 0;
    if (part.size() < need) part.resize(need);
    void *pp = part.data();
    // 1024 columns a tile: the kernel's accumulator block (KernelEmitter.cpp).
    detail::columnSum(
        k.rows, k.cols, 1024, k.rows * k.cols,
        [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t chunk) {
          k.reduce(argv, r0, r1, c0, c1, chunk < 0 ? nullptr : pp, chunk);
        },
        [&](int64_t c0, int64_t c1, int64_t chunks) { k.combine(argv, c0, c1, pp, chunks); });
    return;
  }
  case GeneratedKernel::Schedule::MatmulEpilogue: {
    const TensorRef &a = args[k.lhs], &w = args[k.rhs], &c = args[k.product];
    int64_t kdim = a.shape().back();
    // The kernel's points are flat indices r * cols + c: a block of whole rows is
    // one range, a block of columns one range per row.
    detail::gemmWithEpilogue(a, w, k.transposeRhs, c, k.rows, kdim, k.cols,
                             [&](int64_t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
                               if (c0 == 0 && c1 == k.cols)
                                 k.fn(argv, r0 * k.cols, r1 * k.cols);
                               else
                                 for (int64_t r = r0; r < r1; ++r) k.fn(argv, r * k.cols + c0, r * k.cols + c1);
                             });
    return;
  }
  }
}

}  // namespace lmrt::kernels

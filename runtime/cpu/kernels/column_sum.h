/* Implements: the one order in which the CPU sums columns over many rows, shared by
   the library sum_to and the generated column-reduce kernels (docs/fusion.md), so a
   fused bias gradient has the bits of the unfused one.

   The rows are cut into chunks by the shape alone (columnChunks: at least 64 rows a
   chunk, at most 64 chunks, the rule of the CUDA kernels); each chunk's columns are
   summed in row order, then the chunks' partial sums are added in chunk order. The
   thread count only decides which thread computes which chunk, never the order of
   the additions. Threads take contiguous runs of row chunks: the rows a thread's
   producer (an elementwise kernel, a GEMM's row blocks) wrote are still in its cache,
   and each thread streams whole rows. (The previous order, every column summed over
   all rows by one thread owning a column range, made each thread read every row:
   half-row segments that its prefetcher could not follow and lines the other core had
   just written; [1024, 256] took 120-140 us on 2 threads, the chunked order 70-80.) */
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/kernels/kernel_common.h"

namespace lmrt::kernels::detail {

struct ColumnChunks {
  int64_t chunks = 1, rows = 0;  // `chunks` chunks of `rows` rows (the last may be shorter)
};

inline ColumnChunks columnChunks(int64_t rows) {
  int64_t n = std::max<int64_t>(1, std::min<int64_t>(64, rows / 64));
  int64_t per = std::max<int64_t>(1, (rows + n - 1) / n);
  return {std::max<int64_t>(1, (rows + per - 1) / per), per};
}

/* Sums the columns of a [rows, cols] iteration space on the OpenMP threads.
   tile(r0, r1, c0, c1, chunk) computes rows [r0, r1) of columns [c0, c1) (at most
   `colBlock` of them): with chunk -1 (one chunk holds every row) it stores the
   column sums as the results, else it stores row chunk `chunk`'s partial sums; then
   combine(c0, c1, chunks) adds the partial sums of columns [c0, c1) in chunk order.
   `work` (elements touched) below kParallelMin runs on one thread. */
template <typename Tile, typename Combine>
void columnSum(int64_t rows, int64_t cols, int64_t colBlock, int64_t work, Tile &&tile, Combine &&combine) {
  if (rows <= 0 || cols <= 0) return;
  const ColumnChunks cc = columnChunks(rows);
  int nt = work >= kParallelMin ? omp_get_max_threads() : 1;
  // Few chunks for the threads: narrower column blocks (multiples of 16 columns)
  // give each thread a tile; columns are independent sums, so this changes no bit.
  int64_t blocks = (cols + colBlock - 1) / colBlock;
  if (cc.chunks * blocks < nt) blocks = std::min<int64_t>((nt + cc.chunks - 1) / cc.chunks, (cols + 15) / 16);
  const int64_t width = ((cols + blocks - 1) / blocks + 15) / 16 * 16;
  blocks = (cols + width - 1) / width;
  const int64_t tiles = cc.chunks * blocks;
  nt = (int)std::min<int64_t>(nt, tiles);
  const bool partial = cc.chunks > 1;
  auto run = [&](int t, int n) {
    for (int64_t i = tiles * t / n, e = tiles * (t + 1) / n; i < e; ++i) {
      const int64_t k = i / blocks, c0 = (i % blocks) * width, r0 = k * cc.rows;
      tile(r0, std::min(rows, r0 + cc.rows), c0, std::min(cols, c0 + width), partial ? k : int64_t{-1});
    }
  };
  auto combineShare = [&](int t, int n) {
    const int64_t per = ((cols + n - 1) / n + 15) / 16 * 16, c0 = std::min(cols, t * per);
    const int64_t c1 = std::min(cols, c0 + per);
    if (c0 < c1) combine(c0, c1, cc.chunks);
  };
  if (nt <= 1) {
    run(0, 1);
    if (partial) combineShare(0, 1);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    run(t, n);
    if (partial) {
#pragma omp barrier
      combineShare(t, n);
    }
  }
}

}  // namespace lmrt::kernels::detail

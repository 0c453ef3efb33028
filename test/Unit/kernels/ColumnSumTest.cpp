/* Tests the CPU's one order of column sums (runtime/cpu/kernels/column_sum.h), which the
   library sum_to and the generated column-reduce kernels share: the row chunks follow
   from the shape alone, each chunk sums in row order and the chunks add in chunk order;
   sum_to has exactly those bits (a float sum written out in that order), the same for
   1, 2 and 3 threads, and agrees with a double sum. */
#include <omp.h>

#include "KernelTestUtil.h"
#include "runtime/cpu/kernels/column_sum.h"

namespace lmrt::kernels::test {
namespace {

TEST(ColumnSum, ChunksFollowFromTheRowsAlone) {
  struct Case {
    int64_t rows, chunks, per;
  };
  // At least 64 rows a chunk, at most 64 chunks, every chunk non-empty.
  for (const Case &c : std::vector<Case>{{1, 1, 1},
                                         {63, 1, 63},
                                         {127, 1, 127},
                                         {128, 2, 64},
                                         {200, 3, 67},
                                         {1024, 16, 64},
                                         {1000, 15, 67},
                                         {8192, 64, 128},
                                         {10000, 64, 157}}) {
    detail::ColumnChunks cc = detail::columnChunks(c.rows);
    EXPECT_EQ(cc.chunks, c.chunks) << c.rows;
    EXPECT_EQ(cc.rows, c.per) << c.rows;
    EXPECT_GT(c.rows, (cc.chunks - 1) * cc.rows) << c.rows;  // the last chunk is not empty
    EXPECT_GE(cc.chunks * cc.rows, c.rows) << c.rows;
  }
}

/* The column sums of x [rows, m] in the documented order, in float. */
std::vector<float> chunkedSums(const Buf &x, int64_t rows, int64_t m) {
  detail::ColumnChunks cc = detail::columnChunks(rows);
  std::vector<float> out((size_t)m);
  for (int64_t j = 0; j < m; ++j) {
    float total = 0;
    for (int64_t k = 0; k < cc.chunks; ++k) {
      float part = 0;
      for (int64_t r = k * cc.rows; r < std::min(rows, (k + 1) * cc.rows); ++r) part += (float)x.get(r * m + j);
      total = k == 0 ? part : total + part;
    }
    out[(size_t)j] = total;
  }
  return out;
}

TEST(ColumnSum, SumToHasTheChunkedOrderForAnyThreadCount) {
  struct Case {
    Shape from;
    int64_t m;
  };
  // One chunk (the results stored by the tile), several with a ragged last one, more
  // columns than one 1024-column tile, fewer columns than threads' tiles.
  for (const Case &c : std::vector<Case>{{{8, 3000}, 3000},
                                         {{200, 100}, 100},
                                         {{4, 256, 256}, 256},
                                         {{130, 1500}, 1500},
                                         {{1000, 17}, 17}}) {
    Buf x = randn(c.from, DType::F32, 3.0);
    const int64_t rows = x.numel() / c.m;
    const std::vector<float> want = chunkedSums(x, rows, c.m);
    Buf ref(DType::F64, {c.m});
    for (int64_t j = 0; j < c.m; ++j) {
      double s = 0;
      for (int64_t r = 0; r < rows; ++r) s += x.get(r * c.m + j);
      ref.set(j, s);
    }
    const int saved = omp_get_max_threads();
    for (int t : {1, 2, 3}) {
      omp_set_num_threads(t);
      auto out = runKernel("sum_to", {x}, {{DType::F32, {c.m}}});
      EXPECT_EQ(std::memcmp(out[0].data(), want.data(), (size_t)c.m * sizeof(float)), 0)
          << shapeStr(c.from) << ", " << t << " threads";
      // f32 rounding: about 1e-7 of the magnitudes summed (rows values of N(0, 9)).
      EXPECT_TRUE(allClose(out[0], ref, 1e-5, 1e-6 * 3.0 * (double)rows)) << shapeStr(c.from);
    }
    omp_set_num_threads(saved);
  }
}

}  // namespace
}  // namespace lmrt::kernels::test

/* Tests layer_norm_grad's parameter gradients past one 32-row chunk (many chunks and
   a ragged last one): dgamma and dbeta against sums written out in double, and the
   same bits for 1, 2 and 3 threads (they were per-thread partials before). */
#include <omp.h>

#include "KernelTestUtil.h"

namespace lmrt::kernels::test {
namespace {

TEST(LayerNormChunks, ParameterGradientsMatchDirectSums) {
  const int64_t rows = 203, d = 100;
  Buf x = randn({rows, d}, DType::F64, 2.0), g = randn({d}), dy = randn({rows, d});
  auto out = runKernel("layer_norm_grad", {x, g, dy}, {x.type, g.type, g.type});
  Buf dg(DType::F64, {d}), db(DType::F64, {d});
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += x.get(r * d + j) / d;
    for (int64_t j = 0; j < d; ++j) var += (x.get(r * d + j) - mean) * (x.get(r * d + j) - mean) / d;
    for (int64_t j = 0; j < d; ++j) {
      dg.set(j, dg.get(j) + dy.get(r * d + j) * (x.get(r * d + j) - mean) / std::sqrt(var + 1e-5));
      db.set(j, db.get(j) + dy.get(r * d + j));
    }
  }
  EXPECT_TRUE(allClose(out[1], dg, 1e-10, 1e-10)) << "dgamma";
  EXPECT_TRUE(allClose(out[2], db, 1e-10, 1e-10)) << "dbeta";
}

TEST(LayerNormChunks, SameBitsForAnyThreadCount) {
  const int64_t rows = 203, d = 100;
  Buf x = randn({rows, d}, DType::F32, 2.0), g = randn({d}, DType::F32), dy = randn({rows, d}, DType::F32);
  const int saved = omp_get_max_threads();
  std::vector<std::vector<Buf>> runs;
  for (int t : {1, 2, 3}) {
    omp_set_num_threads(t);
    runs.push_back(runKernel("layer_norm_grad", {x, g, dy}, {x.type, g.type, g.type}));
  }
  omp_set_num_threads(saved);
  for (size_t t = 1; t < runs.size(); ++t)
    for (size_t i = 0; i < 3; ++i)
      EXPECT_EQ(std::memcmp(runs[0][i].data(), runs[t][i].data(), runs[0][i].type.bytes()), 0)
          << "output " << i << ", " << t + 1 << " threads";
}

}  // namespace
}  // namespace lmrt::kernels::test

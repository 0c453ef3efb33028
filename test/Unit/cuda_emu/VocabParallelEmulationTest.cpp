/* Tests the CUDA kernels of the vocabulary-parallel loss, lm.linear_cross_entropy_stats
   and _stats_grad (runtime/cuda/vocab_parallel_kernels.cuh), without a GPU: the chunk
   loop and its row kernels run as they are on the CPU emulation of emulation.h, the
   GEMMs cuBLASLt would run on a plain CPU GEMM, and every result is compared with the
   CPU kernels' (which test/Unit/kernels/GradTest.cpp checks against finite differences):
   a tied [Vr, D] and an untied [D, Vr] weight with a bias, chunks with a partial last one,
   targets of this rank, of other ranks and ignored, f64 and f32 (lse, the target logit,
   the row max and its first class; dh, dw, dbias); the last rank of a padded vocabulary
   (-inf in the padding classes' bias: the results are the block's without them, their
   gradients exactly zero); NaN logits skipped in the max and argmax as the CPU's
   (lm.accuracy's rule); and a first class or a target the
   CPU kernel would refuse makes the row NaN instead of reading out of bounds. */
#include "../kernels/KernelTestUtil.h"
#include "contract/linear_cross_entropy.h"

#include <limits>

#include "emulation.h"
#include "runtime/cuda/vocab_parallel_kernels.cuh"

namespace lmrt::kernels::test {
namespace {

namespace vocab = lmrt::cuda::vocab;

struct EmuLauncher {
  template <typename K, typename... A> void operator()(K kernel, unsigned blocks, int threads, A... args) const {
    lmrt_emu::launch(kernel, {blocks, 1, 1}, {(unsigned)threads, 1, 1}, 0, args...);
  }
};

/* cuBLASLt's part: c (+)= op(a) op(b), row-major, summed in double. */
template <typename T> void cpuGemm(const vocab::Gemm<T> &g) {
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double s = g.accumulate ? (double)g.c[i * g.ldc + j] : 0.0;
      for (int64_t p = 0; p < g.k; ++p)
        s += (double)(g.ta ? g.a[p * g.lda + i] : g.a[i * g.lda + p]) *
             (double)(g.tb ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j]);
      g.c[i * g.ldc + j] = (T)s;
    }
}

struct Case {
  bool tied;
  int64_t rows, vr, d, chunk, vocab, first;
  DType dtype;
  int64_t padding = 0;  // the last rank of a padded vocabulary: its last classes past `vocab`
};

template <typename T> void runCase(const Case &c) {
  SCOPED_TRACE(std::string(c.tied ? "tied" : "untied") + ", rows " + std::to_string(c.rows) + ", chunk " +
               std::to_string(c.chunk) + (c.dtype == DType::F64 ? ", f64" : ", f32"));
  Buf h = randn({c.rows, c.d}, c.dtype), w = c.tied ? randn({c.vr, c.d}, c.dtype) : randn({c.d, c.vr}, c.dtype);
  Buf t = randIds({c.rows}, c.vocab), first = scalar((double)c.first, c.dtype), bias = randn({c.vr}, c.dtype);
  // Two classes with the same weights and bias: rows whose max they hold tie, and
  // the first of them must win on both backends.
  for (int64_t k = 0; k < c.d; ++k) {
    const int64_t from = c.tied ? 1 * c.d + k : k * c.vr + 1, to = c.tied ? 3 * c.d + k : k * c.vr + 3;
    w.set(to, w.get(from));
  }
  bias.set(1, 4.0);
  bias.set(3, 4.0);
  // A padded block (passes/VocabParallel.cpp): the padding classes' weights are zeros
  // and -lm-spmd's mask puts -inf in their bias.
  for (int64_t j = c.vr - c.padding; j < c.vr; ++j) {
    for (int64_t k = 0; k < c.d; ++k) w.set(c.tied ? j * c.d + k : k * c.vr + j, 0.0);
    bias.set(j, -INFINITY);
  }
  t.set(0, (double)c.first);                           // the rank's first class
  t.set(1, (double)(c.first + c.vr - 1 - c.padding));  // and its last
  t.set(2, -100);                            // ignored
  if (c.first > 0) t.set(3, 0);              // another rank's
  Attrs a = attrs({{"transpose_rhs", c.tied}, {"chunk_rows", c.chunk}, {"vocab", c.vocab}});
  const TensorType rows{c.dtype, {c.rows}};
  auto stats = runKernel("linear_cross_entropy_stats", {h, w, t, first, bias}, {rows, rows, rows, rows}, a);
  Buf dlse = randn({c.rows}, c.dtype), dtl = randn({c.rows}, c.dtype);
  auto grad = runKernel("linear_cross_entropy_stats_grad", {h, w, t, first, bias, stats[0], dlse, dtl},
                        {h.type, w.type, bias.type}, a);

  // The chunk the CUDA kernel takes (vocab_parallel.cu): chunk_rows, or all rows for 0.
  const int64_t chunk = linearCrossEntropyCudaChunkRows(c.chunk, c.rows, c.vr, c.d);
  std::vector<T> z((size_t)(chunk * c.vr));
  Buf lse(c.dtype, {c.rows}), tl(c.dtype, {c.rows}), mx(c.dtype, {c.rows}), am(c.dtype, {c.rows});
  Buf dh(c.dtype, h.type.shape), dw(c.dtype, w.type.shape), db(c.dtype, {c.vr});
  for (Buf *b : {&lse, &tl, &mx, &am, &dh, &dw, &db})  // NaN: an element the kernels leave unwritten cannot pass
    for (int64_t i = 0; i < b->numel(); ++i) b->set(i, NAN);
  vocab::StatsCall<T> s{static_cast<const T *>(h.data()), static_cast<const T *>(w.data()),
                        static_cast<const T *>(first.data()), static_cast<const int32_t *>(t.data()), c.tied, c.rows,
                        c.vr, c.d, chunk, c.vocab, -100, z.data()};
  s.bias = static_cast<const T *>(bias.data());
  s.lse = static_cast<T *>(lse.data()), s.targetLogit = static_cast<T *>(tl.data());
  s.rowMax = static_cast<T *>(mx.data()), s.argmax = static_cast<T *>(am.data());
  vocab::runStats(s, EmuLauncher{}, cpuGemm<T>);
  const double rtol = c.dtype == DType::F64 ? 1e-12 : 1e-5, atol = c.dtype == DType::F64 ? 1e-12 : 1e-5;
  EXPECT_TRUE(allClose(lse, stats[0], rtol, atol)) << "lse";
  EXPECT_TRUE(allClose(tl, stats[1], rtol, atol)) << "target_logit";
  EXPECT_TRUE(allClose(mx, stats[2], rtol, atol)) << "max";
  EXPECT_TRUE(allClose(am, stats[3], 0, 0)) << "argmax (a class: equal)";

  vocab::StatsCall<T> g = s;
  g.lse = g.targetLogit = g.rowMax = g.argmax = nullptr;
  g.lseIn = static_cast<const T *>(stats[0].data());
  g.dlse = static_cast<const T *>(dlse.data()), g.dtarget = static_cast<const T *>(dtl.data());
  g.dh = static_cast<T *>(dh.data()), g.dw = static_cast<T *>(dw.data()), g.dbias = static_cast<T *>(db.data());
  vocab::runStats(g, EmuLauncher{}, cpuGemm<T>);
  EXPECT_TRUE(allClose(dh, grad[0], rtol * 10, atol * 10)) << "dh";
  EXPECT_TRUE(allClose(dw, grad[1], rtol * 10, atol * 10)) << "dw";
  EXPECT_TRUE(allClose(db, grad[2], rtol * 10, atol * 10)) << "dbias";
  if (c.padding == 0) return;

  // The padding is out of everything: the results are those of the block without its
  // padding classes (the CPU kernel on w and bias cut to the real ones), and the padding's
  // gradients are exactly zero, on both backends.
  const int64_t real = c.vr - c.padding;
  Buf wr = c.tied ? Buf(c.dtype, {real, c.d}) : Buf(c.dtype, {c.d, real}), br(c.dtype, {real});
  for (int64_t j = 0; j < real; ++j) {
    br.set(j, bias.get(j));
    for (int64_t k = 0; k < c.d; ++k) wr.set(c.tied ? j * c.d + k : k * real + j, w.get(c.tied ? j * c.d + k : k * c.vr + j));
  }
  auto cut = runKernel("linear_cross_entropy_stats", {h, wr, t, first, br}, {rows, rows, rows, rows}, a);
  auto cutGrad = runKernel("linear_cross_entropy_stats_grad", {h, wr, t, first, br, cut[0], dlse, dtl},
                           {h.type, wr.type, br.type}, a);
  const char *names[] = {"lse", "target_logit", "max", "argmax"};
  for (int k = 0; k < 4; ++k) EXPECT_TRUE(allClose(stats[(size_t)k], cut[(size_t)k], rtol, atol)) << names[k] << " (cut)";
  EXPECT_TRUE(allClose(grad[0], cutGrad[0], rtol * 10, atol * 10)) << "dh (cut)";
  for (int64_t j = 0; j < c.vr; ++j) {
    for (int64_t k = 0; k < c.d; ++k) {
      const int64_t at = c.tied ? j * c.d + k : k * c.vr + j;
      if (j < real) {
        EXPECT_NEAR(grad[1].get(at), cutGrad[1].get(c.tied ? j * c.d + k : k * real + j), atol * 10) << "dw " << j;
      } else {
        EXPECT_EQ(grad[1].get(at), 0.0) << "CPU dw of padding class " << j;
        EXPECT_EQ(dw.get(at), 0.0) << "CUDA dw of padding class " << j;
      }
    }
    if (j >= real) {
      EXPECT_EQ(grad[2].get(j), 0.0) << "CPU dbias of padding class " << j;
      EXPECT_EQ(db.get(j), 0.0) << "CUDA dbias of padding class " << j;
    }
  }
}

TEST(VocabParallelEmulation, StatsAndGradMatchTheCpu) {
  runCase<double>({true, 30, 13, 16, 8, 40, 13, DType::F64});    // 4 chunks, the last of 6 rows; rank 1 of 3ish
  runCase<double>({false, 30, 13, 16, 8, 40, 0, DType::F64});    // the first rank
  runCase<double>({true, 5, 300, 7, 0, 900, 600, DType::F64});   // one chunk (chunk_rows 0); a row wider than a block
  runCase<float>({true, 21, 37, 24, 10, 74, 37, DType::F32});
  runCase<float>({false, 21, 37, 24, 21, 74, 0, DType::F32});
  // The last rank of a padded vocabulary (docs/distributed.md, "The vocabulary"): 77
  // classes over 3 ranks in blocks of 26, rank 2 holding 25 and 1 padding; 40 over 3 in
  // blocks of 14, rank 2 holding 12 and 2 padding.
  runCase<double>({true, 30, 26, 16, 8, 77, 52, DType::F64, 1});
  runCase<double>({false, 30, 14, 16, 8, 40, 28, DType::F64, 2});
  runCase<float>({true, 21, 26, 24, 10, 77, 52, DType::F32, 1});
  runCase<float>({false, 21, 14, 24, 21, 40, 28, DType::F32, 2});
}

/* NaN logits (lm.accuracy's rule: a NaN is never the prediction): NaN in the bias of the
   rank's first class and of a middle one, a row whose h is NaN (every logit NaN), and a
   rank whose classes are all NaN give the CPU kernel's argmax exactly, and its max: the largest
   non-NaN logit and its first class, or -inf and class `vocab` for a row of NaNs. */
template <typename T> void nanCase(DType dt) {
  SCOPED_TRACE(dt == DType::F64 ? "f64" : "f32");
  const int64_t rows = 6, vr = 5, d = 7, vocab = 20;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Buf h = randn({rows, d}, dt), w = randn({vr, d}, dt), t = randIds({rows}, vocab), first = scalar(5.0, dt);
  for (int64_t k = 0; k < d; ++k) h.set(2 * d + k, nan);
  for (bool allNaN : {false, true}) {
    SCOPED_TRACE(allNaN ? "every class NaN" : "classes 0 and 2 NaN");
    Buf bias = randn({vr}, dt);
    for (int64_t j = 0; j < vr; ++j)
      if (allNaN || j == 0 || j == 2) bias.set(j, nan);
    Attrs a = attrs({{"transpose_rhs", true}, {"chunk_rows", (int64_t)4}, {"vocab", vocab}});
    const TensorType rt{dt, {rows}};
    auto cpu = runKernel("linear_cross_entropy_stats", {h, w, t, first, bias}, {rt, rt, rt, rt}, a);
    const int64_t chunk = linearCrossEntropyCudaChunkRows(4, rows, vr, d);
    std::vector<T> z((size_t)(chunk * vr));
    Buf lse(dt, {rows}), tl(dt, {rows}), mx(dt, {rows}), am(dt, {rows});
    vocab::StatsCall<T> s{static_cast<const T *>(h.data()), static_cast<const T *>(w.data()),
                          static_cast<const T *>(first.data()), static_cast<const int32_t *>(t.data()), true, rows,
                          vr, d, chunk, vocab, -100, z.data()};
    s.bias = static_cast<const T *>(bias.data());
    s.lse = static_cast<T *>(lse.data()), s.targetLogit = static_cast<T *>(tl.data());
    s.rowMax = static_cast<T *>(mx.data()), s.argmax = static_cast<T *>(am.data());
    vocab::runStats(s, EmuLauncher{}, cpuGemm<T>);
    for (int64_t r = 0; r < rows; ++r) {
      const bool none = allNaN || r == 2;
      EXPECT_EQ(cpu[3].get(r), none ? (double)vocab : cpu[3].get(r)) << "CPU argmax of row " << r;
      EXPECT_EQ(cpu[2].get(r), none ? -INFINITY : cpu[2].get(r)) << "CPU max of row " << r;
      if (!none) {
        EXPECT_TRUE(std::isfinite(cpu[2].get(r))) << "CPU max of row " << r;
        EXPECT_NE(cpu[3].get(r), 5.0) << "row " << r << ": class 5 (NaN) is never the argmax";
        EXPECT_NE(cpu[3].get(r), 7.0) << "row " << r << ": class 7 (NaN) is never the argmax";
      }
      EXPECT_EQ(am.get(r), cpu[3].get(r)) << "argmax of row " << r;
      if (none)
        EXPECT_EQ(mx.get(r), -INFINITY) << "max of row " << r;
      else  // (the test's GEMM sums in double, the CPU kernel's in T)
        EXPECT_NEAR(mx.get(r), cpu[2].get(r), 1e-5 * (1 + std::fabs(cpu[2].get(r)))) << "max of row " << r;
    }
  }
}

TEST(VocabParallelEmulation, NaNLogitsAreNeverTheArgmax) {
  nanCase<double>(DType::F64);
  nanCase<float>(DType::F32);
}

/* What the CPU kernel refuses on the host the device kernels cannot: a first class that is
   not a whole number >= 0 makes every row NaN, a target outside the vocabulary its own row. */
TEST(VocabParallelEmulation, BadFirstOrTargetMakesNaN) {
  const int64_t rows = 3, vr = 4, d = 5;
  Buf h = randn({rows, d}), w = randn({vr, d}), t = randIds({rows}, 8);
  t.set(1, 8);  // outside [0, 8), not ignore_index
  std::vector<double> z((size_t)(rows * vr));
  for (double f : {4.0, 1.5, -4.0}) {
    SCOPED_TRACE("first " + std::to_string(f));
    Buf first = scalar(f), lse(DType::F64, {rows}), tl(DType::F64, {rows}), bias(DType::F64, {vr});
    Buf mx(DType::F64, {rows}), am(DType::F64, {rows});
    vocab::StatsCall<double> s{static_cast<const double *>(h.data()), static_cast<const double *>(w.data()),
                               static_cast<const double *>(first.data()), static_cast<const int32_t *>(t.data()),
                               true, rows, vr, d, rows, 8, -100, z.data()};
    s.bias = static_cast<const double *>(bias.data());
    s.lse = static_cast<double *>(lse.data()), s.targetLogit = static_cast<double *>(tl.data());
    s.rowMax = static_cast<double *>(mx.data()), s.argmax = static_cast<double *>(am.data());
    vocab::runStats(s, EmuLauncher{}, cpuGemm<double>);
    for (int64_t r = 0; r < rows; ++r) {
      const bool nan = f != 4.0 || r == 1;
      EXPECT_EQ(std::isnan(lse.get(r)), nan) << "lse row " << r;
      EXPECT_EQ(std::isnan(tl.get(r)), nan) << "target_logit row " << r;
      EXPECT_EQ(std::isnan(am.get(r)), nan) << "argmax row " << r;
    }
  }
}

}  // namespace
}  // namespace lmrt::kernels::test

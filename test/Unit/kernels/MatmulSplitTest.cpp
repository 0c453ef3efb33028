/* Tests the threaded split of lm.matmul: shapes big enough to be cut into row blocks
   (tall outputs) or column blocks (wide outputs, such as the logits GEMM), with every
   transpose, a shared and a batched rhs and a batch smaller than the thread count,
   against a naive reference; and the same bits for 1 to 5 threads, and in matmul pairs. */
#include <omp.h>

#include "KernelTestUtil.h"

namespace lmrt::kernels::test {
namespace {

/* out[.., i, j] = sum_k op(a)[.., i, k] op(b)[.., k, j], with a rank-2 b shared by the batch. */
Buf naiveMatmul(const Buf &a, const Buf &b, bool ta, bool tb, const Shape &outShape) {
  const Shape &as = a.type.shape, &bs = b.type.shape;
  size_t r = as.size();
  int64_t m = outShape[r - 2], n = outShape[r - 1], k = ta ? as[r - 2] : as[r - 1];
  int64_t batch = a.numel() / (m * k);
  bool shared = bs.size() == 2;
  Buf out(DType::F64, outShape);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x = a.get(bi * m * k + (ta ? p * m + i : i * k + p));
          double y = b.get((shared ? 0 : bi * k * n) + (tb ? j * k + p : p * n + j));
          s += x * y;
        }
        out.set((bi * m + i) * n + j, s);
      }
  return out;
}

struct Case {
  Shape a, b;
  bool ta, tb;
  Shape out;
};

const std::vector<Case> kCases = {
    {{3, 40, 70}, {70, 90}, false, false, {3, 40, 90}},      // tall after flattening: row blocks
    {{20, 64}, {64, 301}, false, false, {20, 301}},          // wide: column blocks, ragged last panel
    {{20, 64}, {301, 64}, false, true, {20, 301}},           // wide, rhs transposed (logits)
    {{64, 300}, {64, 40}, true, false, {300, 40}},           // tall, lhs transposed (weight gradient)
    {{64, 20}, {64, 300}, true, false, {20, 300}},           // wide, lhs transposed
    {{1, 30, 50}, {1, 50, 400}, false, false, {1, 30, 400}},  // batch 1 < threads, batched rhs
    {{3, 50, 30}, {3, 400, 50}, true, true, {3, 30, 400}},   // batch 3, both transposed
    // Few rows per thread: oneDNN computes a block of under 16 rows another way.
    {{40, 300}, {300, 30}, false, false, {40, 30}},
    {{300, 45}, {31, 300}, true, true, {45, 31}},
    {{50, 700}, {20, 700}, false, true, {50, 20}},
    // Tall and narrow, lhs transposed, K >= 512: computed as C^T = B^T A, then
    // transposed (a weight gradient such as GPT's fc2 or tied embedding); ragged tiles.
    {{600, 270}, {600, 40}, true, false, {270, 40}},
    {{512, 1030}, {512, 256}, true, false, {1030, 256}},
    // Weight gradients wider than tall (bf16: row blocks of a dense copy of the
    // transposed lhs, blas.h bf16RowBlocks), one more than 4x as wide (column blocks).
    {{64, 96}, {64, 300}, true, false, {96, 300}},
    {{64, 48}, {64, 300}, true, false, {48, 300}},
};

TEST(MatmulSplit, MatchesNaive) {
  for (DType dt : {DType::F64, DType::F32})
    for (const Case &c : kCases) {
      Buf a = randn(c.a), b = randn(c.b);
      auto out = runKernel("matmul", {a.as(dt), b.as(dt)}, {{dt, c.out}},
                           attrs({{"transpose_lhs", c.ta}, {"transpose_rhs", c.tb}}));
      double tol = dt == DType::F64 ? 1e-12 : 1e-4;
      EXPECT_TRUE(allClose(out[0], naiveMatmul(a, b, c.ta, c.tb, c.out), tol, tol))
          << dtypeName(dt) << " " << shapeStr(c.a) << " x " << shapeStr(c.b) << " ta=" << c.ta << " tb=" << c.tb;
    }
}

TEST(MatmulSplit, SameBitsForAnyThreadCount) {
  const int saved = omp_get_max_threads();
  for (DType dt : {DType::F32, DType::BF16})  // bf16 operands, an f32 product
    for (const Case &c : kCases) {
      Buf a = randn(c.a, DType::F32).as(dt), b = randn(c.b, DType::F32).as(dt);
      Attrs at = attrs({{"transpose_lhs", c.ta}, {"transpose_rhs", c.tb}});
      omp_set_num_threads(1);
      Buf one = runKernel("matmul", {a, b}, {{DType::F32, c.out}}, at)[0];
      for (int t : {2, 3, 4, 5}) {
        omp_set_num_threads(t);
        Buf many = runKernel("matmul", {a, b}, {{DType::F32, c.out}}, at)[0];
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.type.bytes()), 0)
            << dtypeName(dt) << " " << shapeStr(c.a) << " x " << shapeStr(c.b) << " with " << t << " threads";
      }
    }
  omp_set_num_threads(saved);
}

/* bench_tiny's weight gradient in bf16, [1024, 256]^T [1024, 768]: row blocks of a dense
   copy, on oneDNN's brgemm kernels, which plan for the threads they are told of; the
   bits changed with --threads until the GEMM told oneDNN one thread inside parallel
   regions too (gemm_bf16.cpp). */
TEST(MatmulSplit, Bf16WeightGradientSameBitsForAnyThreadCount) {
  const int saved = omp_get_max_threads();
  for (int64_t m : {256, 1024, 4096})
    for (int64_t n : {256, 768, 1024}) {
      Buf a = randn({1024, m}, DType::F32).as(DType::BF16), b = randn({1024, n}, DType::F32).as(DType::BF16);
      Attrs at = attrs({{"transpose_lhs", true}});
      omp_set_num_threads(1);
      Buf one = runKernel("matmul", {a, b}, {{DType::F32, {m, n}}}, at)[0];
      for (int t : {2, 3, 4}) {
        omp_set_num_threads(t);
        Buf many = runKernel("matmul", {a, b}, {{DType::F32, {m, n}}}, at)[0];
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.type.bytes()), 0) << m << " x " << n << ", " << t << " threads";
      }
    }
  omp_set_num_threads(saved);
}


Buf nanBuf(const Shape &shape) {
  Buf b(DType::F32, shape);
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, NAN);
  return b;
}

/* Matmul pairs (registry.h runMatmulPair): two matmuls at once, one a thread, give the
   bits of each alone, for every case above beside the next one and for a linear
   layer's input and weight gradients; a team of other than two threads runs nothing. */
TEST(MatmulSplit, PairSameBitsAsEachAlone) {
  const int saved = omp_get_max_threads();
  std::vector<std::pair<Case, Case>> pairs;
  for (size_t i = 0; i < kCases.size(); ++i) pairs.push_back({kCases[i], kCases[(i + 1) % kCases.size()]});
  // dx = dy w^T and dw = x^T dy of a [256 tokens, 128] -> 512 layer (dy [256, 512]).
  pairs.push_back({{{256, 512}, {128, 512}, false, true, {256, 128}}, {{256, 128}, {256, 512}, true, false, {128, 512}}});
  for (DType dt : {DType::F32, DType::BF16})
    for (const auto &[c, d] : pairs) {
      Buf a0 = randn(c.a, DType::F32).as(dt), b0 = randn(c.b, DType::F32).as(dt);
      Buf a1 = randn(d.a, DType::F32).as(dt), b1 = randn(d.b, DType::F32).as(dt);
      Attrs at0 = withDefaults("matmul", attrs({{"transpose_lhs", c.ta}, {"transpose_rhs", c.tb}}));
      Attrs at1 = withDefaults("matmul", attrs({{"transpose_lhs", d.ta}, {"transpose_rhs", d.tb}}));
      omp_set_num_threads(2);
      Buf alone0 = runKernel("matmul", {a0, b0}, {{DType::F32, c.out}}, at0)[0];
      Buf alone1 = runKernel("matmul", {a1, b1}, {{DType::F32, d.out}}, at1)[0];
      Buf out0 = nanBuf(c.out), out1 = nanBuf(d.out);
      KernelCall k0{{a0.ref(), b0.ref()}, {out0.ref()}, at0}, k1{{a1.ref(), b1.ref()}, {out1.ref()}, at1};
      int failed = 7;
      ASSERT_TRUE(runMatmulPair(k0, k1, failed));
      EXPECT_EQ(failed, -1);
      const std::string what = std::string(dtypeName(dt)) + " " + shapeStr(c.a) + " x " + shapeStr(c.b) + " beside " +
                               shapeStr(d.a) + " x " + shapeStr(d.b);
      EXPECT_EQ(std::memcmp(alone0.data(), out0.data(), out0.type.bytes()), 0) << what << ": the first";
      EXPECT_EQ(std::memcmp(alone1.data(), out1.data(), out1.type.bytes()), 0) << what << ": the second";
      for (int t : {1, 3}) {
        omp_set_num_threads(t);
        Buf idle0 = nanBuf(c.out), idle1 = nanBuf(d.out);
        KernelCall i0{{a0.ref(), b0.ref()}, {idle0.ref()}, at0}, i1{{a1.ref(), b1.ref()}, {idle1.ref()}, at1};
        EXPECT_FALSE(runMatmulPair(i0, i1, failed)) << t << " threads";
        EXPECT_TRUE(std::isnan(idle0.get(0)) && std::isnan(idle1.get(0))) << t << " threads ran it";
      }
    }
  omp_set_num_threads(saved);
}


/* The fused loss's backward GEMMs (dh and dw of each chunk) run as a pair with two
   threads and cut between the threads otherwise: the same bits with 1 to 4 threads,
   in one chunk and in several (dw summed over chunks), tied and untied, f32 and bf16. */
TEST(MatmulSplit, LinearCrossEntropySameBitsForAnyThreadCount) {
  const int saved = omp_get_max_threads();
  for (DType dt : {DType::F32, DType::BF16})
    for (bool tied : {true, false})
      for (int64_t chunk : {0, 40}) {
        const int64_t rows = 96, d = 48, v = 300;
        Buf h = randn({2, rows / 2, d}, DType::F32).as(dt);
        Buf w = (tied ? randn({v, d}, DType::F32) : randn({d, v}, DType::F32)).as(dt);
        Buf t = randIds({2, rows / 2}, v), dloss = scalar(0.7).as(DType::F32);
        Attrs a = attrs({{"ignore_index", (int64_t)-1}, {"transpose_rhs", tied}, {"chunk_rows", chunk}});
        std::vector<TensorType> outs{{DType::F32, h.type.shape}, {DType::F32, w.type.shape}, {DType::F32, {}}};
        omp_set_num_threads(1);
        auto one = runKernel("linear_cross_entropy_with_grad", {h, w, t, dloss}, outs, a);
        for (int threads : {2, 3, 4}) {
          omp_set_num_threads(threads);
          auto many = runKernel("linear_cross_entropy_with_grad", {h, w, t, dloss}, outs, a);
          for (size_t k = 0; k < one.size(); ++k)
            EXPECT_EQ(std::memcmp(one[k].data(), many[k].data(), one[k].type.bytes()), 0)
                << dtypeName(dt) << (tied ? " tied" : " untied") << ", chunk_rows " << chunk << ", output " << k
                << ", " << threads << " threads";
        }
      }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace lmrt::kernels::test

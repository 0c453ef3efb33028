/* Tests the kernels of -lm-mixed-precision (docs/mixed-precision.md): lm.cast
   (f32 <-> bf16, f16: rounding to nearest even, NaN and infinities kept, exact
   back to f32) and lm.matmul on bf16 operands into an f32 product (oneDNN's bf16
   matmul primitive) in every layout the plans use, against an f64 reference.

   The GEMM's tolerance: the product of two bf16 values (8-bit significands) is
   exact in f32 (24 bits), so the only error on the bf16 inputs is the f32
   summation's, at most about K * 2^-24 * sum_k |a_ik b_kj| for any order of the
   sums (Higham, gamma_K); the test takes that bound, so a kernel that rounded
   an operand or the accumulator to bf16 (relative error 2^-9 per element)
   fails it. Against the unrounded f32 operands the error is that of rounding
   each operand to bf16, at most about 2 * 2^-9 * sum_k |a_ik b_kj|, which the
   second comparison bounds: the size of the precision the policy gives up.
   The fused output projection and loss on bf16 and f16 operands: below. */
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "test/Unit/kernels/KernelTestUtil.h"

namespace lmrt::kernels::test {
namespace {

uint16_t bf16Bits(float v) {
  Buf f(DType::F32, {1});
  f.set(0, v);
  std::vector<Buf> out = runKernel("cast", {f}, {TensorType{DType::BF16, {1}}});
  uint16_t bits;
  std::memcpy(&bits, out[0].data(), 2);
  return bits;
}

TEST(Cast, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(bf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16Bits(-2.0f), 0xc000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even significand (1).
  EXPECT_EQ(bf16Bits(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  EXPECT_EQ(bf16Bits(1.0f + 3 * 0x1p-8f), 0x3f82);
  // Just above the tie rounds up.
  EXPECT_EQ(bf16Bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(bf16Bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(bf16Bits(-std::numeric_limits<float>::infinity()), 0xff80);
  uint16_t nan = bf16Bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x007f, 0);  // still a NaN, not an infinity
  // The largest finite float rounds past bf16's largest to infinity, as IEEE rounding does.
  EXPECT_EQ(bf16Bits(std::numeric_limits<float>::max()), 0x7f80);
}

TEST(Cast, RoundTripsAndWidensExactly) {
  Buf x = randn({3, 5, 7}, DType::F32, 3.0);
  std::vector<Buf> b = runKernel("cast", {x}, {TensorType{DType::BF16, {3, 5, 7}}});
  std::vector<Buf> back = runKernel("cast", {b[0]}, {TensorType{DType::F32, {3, 5, 7}}});
  for (int64_t i = 0; i < x.numel(); ++i) {
    // Within half a unit of bf16's last place (2^-8 relative), and widening is exact.
    EXPECT_LE(std::fabs(back[0].get(i) - x.get(i)), std::ldexp(std::fabs(x.get(i)), -8)) << i;
    EXPECT_EQ(back[0].get(i), b[0].get(i)) << i;
  }
  std::vector<Buf> h = runKernel("cast", {x}, {TensorType{DType::F16, {3, 5, 7}}});
  std::vector<Buf> hb = runKernel("cast", {h[0]}, {TensorType{DType::F32, {3, 5, 7}}});
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_LE(std::fabs(hb[0].get(i) - x.get(i)), std::ldexp(std::fabs(x.get(i)), -11) + 0x1p-25) << i;
}

TEST(Cast, CheckNamesTheTypes) {
  EXPECT_EQ(checkMsg("cast", {{DType::F64, {2}}}, {{DType::BF16, {2}}}),
            "cast: converts between f32 and bf16 or f16, not f64 to bf16");
  EXPECT_EQ(checkMsg("cast", {{DType::F32, {2}}}, {{DType::F32, {2}}}),
            "cast: converts between f32 and bf16 or f16, not f32 to f32");
  EXPECT_NE(checkMsg("cast", {{DType::F32, {2}}}, {{DType::BF16, {3}}}), "");
  EXPECT_EQ(checkMsg("cast", {{DType::BF16, {2, 3}}}, {{DType::F32, {2, 3}}}), "");
}

/* Runs matmul on bf16 copies of a and b and checks every element against the f64
   product of the bf16 values (bound: K * 2^-24 * sum |a b|) and of the f32 values
   (bound: 2 * 2^-8 * sum |a b|, bf16's rounding of both operands). */
void expectBf16Matmul(const Buf &a32, const Buf &b32, bool ta, bool tb) {
  Attrs attrs;
  attrs.set("transpose_lhs", ta);
  attrs.set("transpose_rhs", tb);
  Buf a = a32.as(DType::BF16), b = b32.as(DType::BF16);
  std::string err;
  auto shape = shapes::matmul(a.type.shape, b.type.shape, ta, tb, err);
  ASSERT_TRUE(shape) << err;
  EXPECT_NE(checkMsg("matmul", {a.type, b.type}, {{DType::BF16, *shape}}, attrs), "")
      << "a bf16 product must be refused: the GEMM accumulates and writes f32";
  std::vector<Buf> got = runKernel("matmul", {a, b}, {TensorType{DType::F32, *shape}}, attrs);
  std::vector<Buf> ref = runKernel("matmul", {a.as(DType::F64), b.as(DType::F64)}, {TensorType{DType::F64, *shape}}, attrs);
  std::vector<Buf> ref32 = runKernel("matmul", {a32.as(DType::F64), b32.as(DType::F64)}, {TensorType{DType::F64, *shape}}, attrs);
  Buf absA = a.as(DType::F64), absB = b.as(DType::F64);
  for (int64_t i = 0; i < absA.numel(); ++i) absA.set(i, std::fabs(absA.get(i)));
  for (int64_t i = 0; i < absB.numel(); ++i) absB.set(i, std::fabs(absB.get(i)));
  std::vector<Buf> mag = runKernel("matmul", {absA, absB}, {TensorType{DType::F64, *shape}}, attrs);
  const int64_t k = ta ? a.type.shape[a.type.shape.size() - 2] : a.type.shape.back();
  int64_t worst = -1;
  double worstRatio = 0;
  for (int64_t i = 0; i < got[0].numel(); ++i) {
    const double bound = (double)k * 0x1p-24 * mag[0].get(i) + 1e-30;
    const double ratio = std::fabs(got[0].get(i) - ref[0].get(i)) / bound;
    if (!(ratio <= worstRatio)) worstRatio = ratio, worst = i;
    EXPECT_LE(std::fabs(got[0].get(i) - ref32[0].get(i)), 2 * 0x1p-8 * mag[0].get(i) + 1e-30) << i;
  }
  EXPECT_LE(worstRatio, 1.0) << "element " << worst << ": " << got[0].get(worst) << " vs " << ref[0].get(worst);
}

TEST(Bf16Matmul, EveryLayoutAgainstF64) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("ta ") + (ta ? "1" : "0") + " tb " + (tb ? "1" : "0"));
      // Batched with batched rhs, [2, 37, 19] x [2, 19, 23] (odd sizes: oneDNN's tails).
      expectBf16Matmul(randn(ta ? Shape{2, 19, 37} : Shape{2, 37, 19}, DType::F32),
                       randn(tb ? Shape{2, 23, 19} : Shape{2, 19, 23}, DType::F32), ta, tb);
      // A shared rank-2 rhs, as the plans' projections: [3, 16, 48] x [48, 40].
      expectBf16Matmul(randn(ta ? Shape{3, 48, 16} : Shape{3, 16, 48}, DType::F32),
                       randn(tb ? Shape{40, 48} : Shape{48, 40}, DType::F32), ta, tb);
    }
}

TEST(Bf16Matmul, PlanShapes) {
  // The GPT weight gradient (tall transposed lhs: the kernel's transposed-scratch
  // path), [768, 512]^T [768, 128], and a projection large enough to be split
  // over threads, [768, 128] x [128, 512].
  expectBf16Matmul(randn({768, 512}, DType::F32), randn({768, 128}, DType::F32), true, false);
  // Weight gradients of GPT-2 small at b4 x t64 (k = 256 tokens): row blocks of the
  // transposed lhs copied dense ([256, 768]^T [256, 2304]), and a transposed lhs too
  // large to copy (k = 4096 x a 256-row block > kDenseCopyMax) that runs strided.
  expectBf16Matmul(randn({256, 768}, DType::F32), randn({256, 2304}, DType::F32), true, false);
  expectBf16Matmul(randn({4100, 1024}, DType::F32), randn({4100, 512}, DType::F32), true, false);
  expectBf16Matmul(randn({768, 128}, DType::F32), randn({128, 512}, DType::F32), false, false);
  expectBf16Matmul(randn({768, 128}, DType::F32), randn({512, 128}, DType::F32), false, true);
}

TEST(Bf16Matmul, EmptySumIsZero) {
  Buf a(DType::BF16, {4, 0}), b(DType::BF16, {0, 3});
  std::vector<Buf> c = runKernel("matmul", {a, b}, {TensorType{DType::F32, {4, 3}}});
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(c[0].get(i), 0.0);
}

TEST(Bf16Matmul, OperandsMustMatch) {
  // One operand type; bf16 operands give an f32 product, never a bf16 one.
  EXPECT_EQ(checkMsg("matmul", {{DType::BF16, {2, 3}}, {DType::F32, {3, 4}}}, {{DType::F32, {2, 4}}}),
            "matmul: rhs f32[3, 4] must have the element type of lhs bf16[2, 3]");
  EXPECT_NE(checkMsg("matmul", {{DType::BF16, {2, 3}}, {DType::BF16, {3, 4}}}, {{DType::BF16, {2, 4}}}), "");
  EXPECT_EQ(checkMsg("matmul", {{DType::BF16, {2, 3}}, {DType::BF16, {3, 4}}}, {{DType::F32, {2, 4}}}), "");
}

/* |x| elementwise, in f64. */
Buf absOf(const Buf &x) {
  Buf a = x.as(DType::F64);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, std::fabs(a.get(i)));
  return a;
}

/* linear_cross_entropy(_with_grad) on reduced operands (`dt`: bf16 or f16) against
   the f64 kernel on the same rounded h and w. The logits are f32 sums of exact
   products, so the loss is within f32 rounding; dh = dl w and dw = dl^T h read the
   logit gradient dl rounded to `dt` (relative error `unit`, 2^-9 for bf16), so each
   element is within about unit * sum |dl| |w| (resp. |dl| |h|); the test allows
   twice that, the rest being f32 sums. 140 rows in chunks of 64 (the last of 12,
   so dw sums three chunks), V = 150 (column panels with a tail), an ignored row;
   a tied [V, D] table and an untied [D, V] weight. f16's small gradients are
   subnormal (absolute error up to `tiny`, 2^-25), hence a seed of 1024 for it, as a
   loss scale would give, and an absolute term of tiny * sum |w| (resp. |h|) over all of w (resp. h). */
void expectReducedLinearCrossEntropy(DType dt, double unit, double tiny, double seed) {
  const int64_t rows = 140, d = 48, v = 150;
  for (bool tied : {true, false}) {
    SCOPED_TRACE(std::string(dtypeName(dt)) + (tied ? " tied [V, D]" : " untied [D, V]"));
    Buf h32 = randn({rows, d}, DType::F32), w32 = randn(tied ? Shape{v, d} : Shape{d, v}, DType::F32, 0.5);
    Buf t = randIds({rows}, v);
    t.set(70, -1);
    Attrs a = attrs({{"ignore_index", (int64_t)-1}, {"transpose_rhs", tied}, {"chunk_rows", (int64_t)64}});
    Buf h = h32.as(dt), w = w32.as(dt), h64 = h.as(DType::F64), w64 = w.as(DType::F64);
    const TensorType loss32{DType::F32, {}}, loss64{DType::F64, {}};
    EXPECT_NE(checkMsg("linear_cross_entropy_with_grad", {h.type, w.type, t.type, loss32},
                       {{dt, h.type.shape}, {DType::F32, w.type.shape}, loss32}, a),
              "")
        << "dh must be f32";
    EXPECT_NE(checkMsg("linear_cross_entropy_with_grad", {h.type, w.type, t.type, {dt, {}}},
                       {h32.type, {DType::F32, w.type.shape}, loss32}, a),
              "")
        << "dloss must be f32";
    EXPECT_NE(checkMsg("linear_cross_entropy", {h.type, w32.type, t.type}, {loss32}, a), "") << "w must be h's type";
    auto got = runKernel("linear_cross_entropy_with_grad", {h, w, t, scalar(seed, DType::F32)},
                         {h32.type, {DType::F32, w.type.shape}, loss32}, a);
    auto ref = runKernel("linear_cross_entropy_with_grad", {h64, w64, t, scalar(seed)},
                         {h64.type, w64.type, loss64}, a);
    auto fwd = runKernel("linear_cross_entropy", {h, w, t}, {loss32}, a);
    EXPECT_NEAR(got[2].get(0), ref[2].get(0), 2e-6 * std::fabs(ref[2].get(0)));
    EXPECT_EQ(fwd[0].get(0), got[2].get(0)) << "the forward op's loss";

    // The bounds' magnitudes from the f64 logit gradient.
    Buf logits = runKernel("matmul", {h64, w64}, {{DType::F64, {rows, v}}}, attrs({{"transpose_rhs", tied}}))[0];
    Buf dl = runKernel("cross_entropy_with_grad", {logits, t, scalar(seed)}, {logits.type, loss64},
                       attrs({{"ignore_index", (int64_t)-1}}))[0];
    Buf magDh = runKernel("matmul", {absOf(dl), absOf(w64)}, {h64.type}, attrs({{"transpose_rhs", !tied}}))[0];
    Buf magDw = tied ? runKernel("matmul", {absOf(dl), absOf(h64)}, {w64.type}, attrs({{"transpose_lhs", true}}))[0]
                     : runKernel("matmul", {absOf(h64), absOf(dl)}, {w64.type}, attrs({{"transpose_lhs", true}}))[0];
    double sumW = 0, sumH = 0;
    for (int64_t i = 0; i < w64.numel(); ++i) sumW += std::fabs(w64.get(i));
    for (int64_t i = 0; i < h64.numel(); ++i) sumH += std::fabs(h64.get(i));
    // (sum |w| over all of w bounds each column's sum)
    const double atolDh = tiny * sumW + 1e-7 * seed, atolDw = tiny * sumH + 1e-7 * seed;
    for (int64_t i = 0; i < got[0].numel(); ++i)
      ASSERT_LE(std::fabs(got[0].get(i) - ref[0].get(i)), 2 * unit * magDh.get(i) + atolDh) << "dh " << i;
    for (int64_t i = 0; i < got[1].numel(); ++i)
      ASSERT_LE(std::fabs(got[1].get(i) - ref[1].get(i)), 2 * unit * magDw.get(i) + atolDw) << "dw " << i;
  }
}

/* The data-movement ops (transpose, slice, slice_grad) on 2-byte storage move each
   element whole: the same values as the f32 run on the widened input. (They once moved
   4-byte words whatever the dtype, which a bf16 tensor through them would scramble.) */
TEST(ShapeOps, MoveTwoByteElements) {
  for (DType low : {DType::BF16, DType::F16}) {
    Buf x(low, {3, 4, 5}), wide(DType::F32, {3, 4, 5});
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.set(i, 0.25 * (double)i - 7.0);
      wide.set(i, x.get(i));
    }
    auto expectSame = [&](const char *op, std::vector<Buf> lowIn, std::vector<Buf> wideIn, Shape out,
                          const Attrs &a) {
      std::vector<Buf> l = runKernel(op, lowIn, {TensorType{low, out}}, a);
      std::vector<Buf> w = runKernel(op, wideIn, {TensorType{DType::F32, out}}, a);
      for (int64_t i = 0; i < w[0].numel(); ++i) EXPECT_EQ(l[0].get(i), w[0].get(i)) << op << " " << i;
    };
    expectSame("transpose", {x}, {wide}, {5, 3, 4}, attrs({{"permutation", std::vector<int64_t>{2, 0, 1}}}));
    Attrs sl = attrs({{"start", std::vector<int64_t>{0, 1, 1}},
                      {"limit", std::vector<int64_t>{3, 4, 5}},
                      {"stride", std::vector<int64_t>{1, 2, 3}}});
    expectSame("slice", {x}, {wide}, {3, 2, 2}, sl);
    Buf dy(low, {3, 2, 2}), dyWide(DType::F32, {3, 2, 2});
    for (int64_t i = 0; i < dy.numel(); ++i) {
      dy.set(i, 1.5 + (double)i);
      dyWide.set(i, dy.get(i));
    }
    expectSame("slice_grad", {dy}, {dyWide}, {3, 4, 5}, sl);
  }
}

TEST(Bf16LinearCrossEntropy, AgainstF64) { expectReducedLinearCrossEntropy(DType::BF16, 0x1p-9, 0.0, 0.7); }
TEST(F16LinearCrossEntropy, AgainstF64) { expectReducedLinearCrossEntropy(DType::F16, 0x1p-11, 0x1p-25, 1024.0); }

}  // namespace
}  // namespace lmrt::kernels::test

/* Tests the f32 math the generated kernels inline (contract/scalar_math.h) against the
   C library in double: the normal CDF behind exact GELU over [-14, 14] (the lower tail
   down to the smallest normal floats, where 1 + erf(x) cancels) within bounds per range,
   and GELU and its gradient, which use it, within 1e-6 of their largest
   magnitude nearby; exp within 2 ulp-ish (2.5e-7). */
#include <gtest/gtest.h>

#include <cmath>

#include "contract/scalar_math.h"

namespace {

double cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

/* Relative error by range of x, measured: [-14, -6) 1.9e-5, [-6, -3) 4.2e-6, [-3, -1)
   1.2e-6, [-1, 0) 4.1e-7, [0, 14) 3.5e-7. The tail is bounded by the f32 rounding of x^2
   inside exp (an ulp of 80 is 7.6e-6); the C library's 0.5 (1 + erff(x / sqrt 2)) it
   replaces was off by 1.1e-5 on [-3, -1) and returned 0 below x = -5.4 (relative error
   1), and by 1.8e-7 on [-1, 0). */
TEST(ScalarMath, NormalCdfIsAccurateIntoTheTail) {
  struct Range {
    double lo, hi, bound;
  };
  for (Range r : {Range{-14, -6, 3e-5}, Range{-6, -3, 6e-6}, Range{-3, -1, 1.5e-6}, Range{-1, 0, 5e-7},
                  Range{0, 14, 5e-7}}) {
    double worst = 0, worstAt = 0;
    for (double x0 = r.lo; x0 < r.hi; x0 += 1e-4) {
      const float x = (float)x0;
      const double ref = cdf((double)x);
      if (ref < 1e-37) continue;  // below f32's normal range
      const double rel = std::fabs((double)lmc::normalCdf(x) - ref) / ref;
      if (rel > worst) worst = rel, worstAt = x;
    }
    EXPECT_LT(worst, r.bound) << "on [" << r.lo << ", " << r.hi << "), at x = " << worstAt;
  }
  EXPECT_EQ(lmc::normalCdf(-30.0f), 0.0f);
  EXPECT_EQ(lmc::normalCdf(30.0f), 1.0f);
  EXPECT_TRUE(std::isnan(lmc::normalCdf(NAN)));
}

TEST(ScalarMath, ExactGeluAndItsGradientFollowTheCdf) {
  for (int i = -4000; i <= 4000; ++i) {
    const float x = (float)(i * 2e-3);
    const double g = (double)x * cdf((double)x);
    const double dg = cdf((double)x) + (double)x * std::exp(-0.5 * (double)x * x) / std::sqrt(2 * M_PI);
    const double scale = std::max(1.0, std::fabs((double)x));
    EXPECT_NEAR(lmc::geluErf(x), g, 1e-6 * scale) << x;
    EXPECT_NEAR(lmc::geluErfGrad(x, 1.0f), dg, 1e-6 * scale) << x;
  }
  EXPECT_DOUBLE_EQ(lmc::normalCdf(0.5), cdf(0.5));  // f64 keeps the C library's erf
}

TEST(ScalarMath, ExpIsAccurate) {
  for (int i = -8700; i <= 8800; ++i) {
    const float x = (float)(i * 1e-2);
    const double ref = std::exp((double)x);
    EXPECT_LE(std::fabs((double)lmc::exp(x) - ref) / ref, 2.5e-7) << x;
  }
}

}  // namespace

/* Tests token sampling: greedy at temperature 0, top-k restriction, the
   inverse-CDF draw, and temperature sharpening. */
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/train/token_sampler.h"

using namespace lmrt;

TEST(TokenSampler, GreedyAtTemperatureZero) {
  EXPECT_EQ(sampleToken({0.1, 3.0, -1.0, 2.9}, 0.0, 0, 0.99), 1);
}

TEST(TokenSampler, InvertsTheCumulativeDistribution) {
  std::vector<double> l = {0.0, std::log(3.0)};  // probabilities 1/4, 3/4
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.0), 0);
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.24), 0);
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.26), 1);
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.999999), 1);
}

TEST(TokenSampler, TopKKeepsOnlyTheLargest) {
  std::vector<double> l = {5.0, 0.0, 4.0, 4.5};
  for (double u = 0; u < 1; u += 0.01) {
    int64_t t = sampleToken(l, 1.0, 2, u);
    EXPECT_TRUE(t == 0 || t == 3) << u;
  }
  EXPECT_EQ(sampleToken(l, 1.0, 1, 0.9), 0);
}

TEST(TokenSampler, LowTemperatureSharpens) {
  std::vector<double> l = {0.0, 1.0};
  // With T = 0.1 the second token has probability 1/(1+e^-10): u = 0.001 picks it.
  EXPECT_EQ(sampleToken(l, 0.1, 0, 0.001), 1);
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.001), 0);
}

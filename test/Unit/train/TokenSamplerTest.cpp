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

/* Nucleus sampling: probabilities 0.5, 0.3, 0.15, 0.05 (ids 2, 0, 3, 1). top_p = 0.7
   keeps the fewest most likely reaching 0.7: ids 2 and 0, renormalised to 5/8, 3/8 and
   drawn in id order (0 first). top_p = 0.45 keeps id 2 alone; 1 keeps all. */
TEST(TokenSampler, TopPKeepsTheNucleus) {
  std::vector<double> l = {std::log(0.3), std::log(0.05), std::log(0.5), std::log(0.15)};
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.0, 0.7), 0);
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.37, 0.7), 0);  // below 3/8
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.38, 0.7), 2);
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.999, 0.7), 2);
  for (double u = 0; u < 1; u += 0.05) EXPECT_EQ(sampleToken(l, 1.0, 0, u, 0.45), 2) << u;
  // top_p = 1 is the plain draw: the cumulative boundaries 0.3, 0.35, 0.85.
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.32, 1.0), 1);
  EXPECT_EQ(sampleToken(l, 1.0, 0, 0.9, 1.0), 3);
  // With top_k = 2 first (ids 2, 0), then top_p = 0.6 of that: 5/8 >= 0.6 keeps id 2.
  EXPECT_EQ(sampleToken(l, 1.0, 2, 0.0, 0.6), 2);
}

/* The CTRL penalty as Hugging Face applies it: positive logits divided, negative ones
   multiplied, each id once however often it occurs; unseen ids untouched. */
TEST(TokenSampler, RepetitionPenalty) {
  std::vector<double> l = {2.0, -1.0, 3.0, 0.5};
  penalizeRepeats(l, {0, 1, 0, 1, 0}, 2.0);
  EXPECT_EQ(l, (std::vector<double>{1.0, -2.0, 3.0, 0.5}));
  penalizeRepeats(l, {2, 3}, 1.0);
  EXPECT_EQ(l, (std::vector<double>{1.0, -2.0, 3.0, 0.5}));
}

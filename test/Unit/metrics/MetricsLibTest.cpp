// The metrics of runtime/metrics on hand-computed cases and at their edges.
#include <gtest/gtest.h>

#include <cmath>

#include "base/tensor.h"
#include "runtime/metrics/calibration.h"
#include "runtime/metrics/classification.h"
#include "runtime/metrics/correlation.h"
#include "runtime/metrics/rates.h"
#include "runtime/metrics/squad.h"

namespace lmrt::metrics {
namespace {

using Ints = std::vector<int64_t>;

TEST(Classification, EmptyInputIsAnError) {
  EXPECT_THROW(accuracy({}, {}), Error);
  EXPECT_THROW(f1Macro({}, {}), Error);
  EXPECT_THROW(matthews({}, {}), Error);
  EXPECT_THROW(accuracy({1, 2}, {1}), Error);
}

TEST(Classification, HandComputed) {
  Ints labels = {0, 0, 1, 1, 1}, preds = {0, 1, 1, 1, 0};
  EXPECT_DOUBLE_EQ(accuracy(labels, preds), 0.6);
  // Class 1: tp 2, fp 1, fn 1 -> 4/6. Class 0: tp 1, fp 1, fn 1 -> 2/4.
  EXPECT_DOUBLE_EQ(f1Binary(labels, preds), 4.0 / 6);
  EXPECT_DOUBLE_EQ(f1Macro(labels, preds), (4.0 / 6 + 0.5) / 2);
  EXPECT_DOUBLE_EQ(f1Micro(labels, preds), 0.6);
  // Binary MCC: (tp·tn − fp·fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) = (2·1 − 1·1)/sqrt(3·3·2·2).
  EXPECT_NEAR(matthews(labels, preds), 1.0 / 6, 1e-15);
}

TEST(Classification, ClassNeverPredictedCountsAsZeroF1) {
  // Class 2 is a label but never predicted: its F1 is 0 and it stays in the macro mean.
  Ints labels = {0, 1, 2, 2}, preds = {0, 1, 1, 1};
  EXPECT_DOUBLE_EQ(f1Macro(labels, preds), (1.0 + 0.5 + 0.0) / 3);
  // A positive class that never occurs nor is predicted: F1 0, not NaN.
  EXPECT_DOUBLE_EQ(f1Binary({0, 0}, {0, 0}), 0.0);
}

TEST(Classification, MatthewsOfOneClassIsZero) {
  EXPECT_DOUBLE_EQ(matthews({1, 1, 1}, {1, 1, 1}), 0.0);  // sklearn: 0 when a variance is 0
  EXPECT_DOUBLE_EQ(matthews({0, 1, 1}, {1, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(matthews({0, 1, 2}, {0, 1, 2}), 1.0);
}

TEST(Classification, ArgmaxTakesTheFirstOfTies) {
  EXPECT_EQ(argmax({1.0, 3.0, 3.0}), 1);
  EXPECT_THROW(argmax({}), Error);
}

TEST(Correlation, ConstantVectorIsNaN) {
  // Undefined (0/0): NaN, as scipy, never a number that reads as "uncorrelated".
  EXPECT_TRUE(std::isnan(pearson({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(spearman({1, 2, 3}, {5, 5, 5})));
  EXPECT_THROW(pearson({1}, {2}), Error);
  EXPECT_THROW(spearman({1, 2}, {2}), Error);
}

TEST(Correlation, TiesTakeTheirMeanRank) {
  EXPECT_EQ(averageRanks({10, 20, 10, 30}), (std::vector<double>{1.5, 3, 1.5, 4}));
  EXPECT_DOUBLE_EQ(pearson({1, 2, 3}, {2, 4, 6}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3}, {1, 8, 27}), 1.0);
}

TEST(PassAtK, UnbiasedEstimator) {
  EXPECT_DOUBLE_EQ(passAtK(10, 0, 1), 0.0);
  EXPECT_DOUBLE_EQ(passAtK(10, 3, 1), 0.3);
  EXPECT_DOUBLE_EQ(passAtK(10, 10, 5), 1.0);
  EXPECT_DOUBLE_EQ(passAtK(10, 8, 3), 1.0);  // n − c < k: every draw of 3 holds a pass
  // 1 − C(7, 2)/C(10, 2) = 1 − 21/45.
  EXPECT_NEAR(passAtK(10, 3, 2), 1 - 21.0 / 45, 1e-15);
  // n in the thousands: the product stays finite where the binomials overflow.
  EXPECT_NEAR(passAtK(2000, 1, 100), 100.0 / 2000, 1e-12);
}

TEST(PassAtK, KAboveNIsAnError) {
  EXPECT_THROW(passAtK(5, 1, 10), Error);
  EXPECT_THROW(passAtK(5, 6, 1), Error);
  EXPECT_THROW(passAtK(0, 0, 1), Error);
}

TEST(Rates, PerplexityAndBitsPerByte) {
  EXPECT_DOUBLE_EQ(perplexity(0, 10), 1.0);
  EXPECT_NEAR(perplexity(10 * std::log(50.0), 10), 50.0, 1e-12);
  EXPECT_NEAR(bitsPerByte(8 * std::log(2.0), 4), 2.0, 1e-15);
  EXPECT_THROW(perplexity(1, 0), Error);
  EXPECT_THROW(bitsPerByte(1, 0), Error);
}

TEST(Calibration, PerfectlyCalibratedHasZeroEce) {
  // Confidence 0.75 on four examples, three right: accuracy equals confidence.
  double z = std::log(3.0);  // softmax([log 3, 0]) = [0.75, 0.25]
  std::vector<Scored> s = {{{z, 0}, 0}, {{z, 0}, 0}, {{z, 0}, 0}, {{z, 0}, 1}};
  EXPECT_NEAR(expectedCalibrationError(s), 0.0, 1e-15);
  EXPECT_NEAR(negativeLogLikelihood(s), -(3 * std::log(0.75) + std::log(0.25)) / 4, 1e-15);
  // Its temperature is already the best: T = 1.
  EXPECT_NEAR(fitTemperature(s), 1.0, 1e-9);
}

TEST(Calibration, OverconfidentLogitsGetATemperatureAboveOne) {
  double z = 10 * std::log(3.0);  // confidence ~1 but right 3 times in 4
  std::vector<Scored> s = {{{z, 0}, 0}, {{z, 0}, 0}, {{z, 0}, 0}, {{z, 0}, 1}};
  EXPECT_NEAR(fitTemperature(s), 10.0, 1e-7);
  EXPECT_NEAR(expectedCalibrationError(s, 10.0), 0.0, 1e-12);
}

TEST(Calibration, BadInputIsAnError) {
  EXPECT_THROW(expectedCalibrationError({}), Error);
  EXPECT_THROW(negativeLogLikelihood({{{1.0}, 0}}), Error);       // one class
  EXPECT_THROW(negativeLogLikelihood({{{1.0, 2.0}, 2}}), Error);  // label out of range
  EXPECT_THROW(negativeLogLikelihood({{{1.0, 2.0}, 0}}, 0.0), Error);
}

TEST(Squad, Normalisation) {
  EXPECT_EQ(normalizeAnswer("  The Eiffel   Tower! "), "eiffel tower");
  EXPECT_EQ(normalizeAnswer("an apple, a pear"), "apple pear");
  EXPECT_EQ(normalizeAnswer("theatre"), "theatre");          // an article only as a whole word
  EXPECT_EQ(normalizeAnswer("ÉCOLE Ωmega"), "école ωmega");  // Latin-1 and Greek capitals
  EXPECT_EQ(normalizeAnswer("the"), "");
}

TEST(Squad, ExactMatchAndF1) {
  EXPECT_EQ(bestExactMatch("the Tower", {"Eiffel Tower", "tower"}), 1.0);
  // pred {eiffel, tower, paris}, gold {eiffel, tower}: P 2/3, R 1.
  EXPECT_NEAR(tokenF1("Eiffel Tower, Paris", "the Eiffel Tower"), 0.8, 1e-15);
  EXPECT_EQ(tokenF1("the", "a"), 0.0);  // both empty after normalisation: 0 in v1.1
  EXPECT_THROW(bestTokenF1("x", {}), Error);
}

}  // namespace
}  // namespace lmrt::metrics

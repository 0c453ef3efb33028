/* Tests the learning-rate schedule at its key steps: warmup ramp, the peak,
   the cosine midpoint, the floor and beyond, constant, and bad configs. */
#include <gtest/gtest.h>

#include "runtime/lmrt/tensor.h"
#include "runtime/train/schedule.h"

using namespace lmrt;

TEST(Schedule, WarmupThenCosineToMinLr) {
  LrSchedule s = makeSchedule("cosine", 1e-3, 1e-4, 100, 0, 1100);  // decay over the run
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 1e-3 * 1 / 101);
  EXPECT_DOUBLE_EQ(learningRate(s, 49), 1e-3 * 50 / 101);
  EXPECT_DOUBLE_EQ(learningRate(s, 99), 1e-3 * 100 / 101);
  EXPECT_DOUBLE_EQ(learningRate(s, 100), 1e-3);               // peak right after warmup
  EXPECT_NEAR(learningRate(s, 600), (1e-3 + 1e-4) / 2, 1e-15);  // halfway: cos(pi/2) = 0
  EXPECT_NEAR(learningRate(s, 1100), 1e-4, 1e-15);
  EXPECT_DOUBLE_EQ(learningRate(s, 5000), 1e-4);              // stays at the floor
  for (int k = 101; k < 1100; ++k) ASSERT_LT(learningRate(s, k), learningRate(s, k - 1));
}

TEST(Schedule, ExplicitDecayStepsAndConstant) {
  LrSchedule s = makeSchedule("cosine", 2.0, 0.0, 0, 10, 1000);
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 2.0);
  EXPECT_NEAR(learningRate(s, 5), 1.0, 1e-15);
  EXPECT_DOUBLE_EQ(learningRate(s, 10), 0.0);
  LrSchedule c = makeSchedule("constant", 0.5, 0.0, 4, 0, 100);
  EXPECT_DOUBLE_EQ(learningRate(c, 0), 0.1);
  EXPECT_DOUBLE_EQ(learningRate(c, 4), 0.5);
  EXPECT_DOUBLE_EQ(learningRate(c, 99), 0.5);
  // Warmup longer than the decay: min_lr once warmup ends.
  LrSchedule w = makeSchedule("cosine", 1.0, 0.1, 20, 10, 100);
  EXPECT_DOUBLE_EQ(learningRate(w, 20), 0.1);
}

TEST(Schedule, RejectsBadConfigs) {
  EXPECT_THROW(makeSchedule("linear", 1e-3, 0, 0, 0, 10), Error);
  EXPECT_THROW(makeSchedule("cosine", -1e-3, 0, 0, 0, 10), Error);
  EXPECT_THROW(makeSchedule("cosine", 1e-3, 1e-2, 0, 0, 10), Error);
  EXPECT_THROW(makeSchedule("cosine", 1e-3, 0, -1, 0, 10), Error);
}

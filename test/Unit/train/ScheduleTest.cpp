/* Tests the learning-rate schedule at its key steps: warmup ramp, the peak,
   the cosine midpoint, the floor and beyond, constant, and bad configs. */
#include <gtest/gtest.h>

#include "base/tensor.h"
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
  EXPECT_THROW(makeSchedule("step", 1e-3, 0, 0, 0, 10), Error);
  EXPECT_THROW(makeSchedule("wsd", 1e-3, 0, 0, 0, 10, 0.0), Error);
  EXPECT_THROW(makeSchedule("wsd", 1e-3, 0, 0, 0, 10, 1.5), Error);
  EXPECT_THROW(makeSchedule("cosine", -1e-3, 0, 0, 0, 10), Error);
  EXPECT_THROW(makeSchedule("cosine", 1e-3, 1e-2, 0, 0, 10), Error);
  EXPECT_THROW(makeSchedule("cosine", 1e-3, 0, -1, 0, 10), Error);
}

TEST(Schedule, LinearDecayToMinLr) {
  LrSchedule s = makeSchedule("linear", 1.0, 0.1, 10, 0, 110);  // decay over steps 10..110
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 1.0 / 11);
  EXPECT_DOUBLE_EQ(learningRate(s, 10), 1.0);
  EXPECT_NEAR(learningRate(s, 60), 0.55, 1e-15);  // halfway between 1 and 0.1
  EXPECT_NEAR(learningRate(s, 110), 0.1, 1e-15);
  EXPECT_DOUBLE_EQ(learningRate(s, 500), 0.1);
  for (int k = 11; k <= 110; ++k) ASSERT_LT(learningRate(s, k), learningRate(s, k - 1));
}

TEST(Schedule, WarmupStableDecay) {
  // Warmup 10, decay end 110, cooldown 20% of the 100 steps after warmup: stable on
  // 10..89, linear from 1.0 at step 90 to 0.0 at step 110.
  LrSchedule s = makeSchedule("wsd", 1.0, 0.0, 10, 0, 110, 0.2);
  EXPECT_EQ(s.cooldownSteps, 20);
  EXPECT_DOUBLE_EQ(learningRate(s, 9), 10.0 / 11);
  EXPECT_DOUBLE_EQ(learningRate(s, 10), 1.0);
  EXPECT_DOUBLE_EQ(learningRate(s, 89), 1.0);
  EXPECT_DOUBLE_EQ(learningRate(s, 90), 1.0);
  EXPECT_NEAR(learningRate(s, 100), 0.5, 1e-15);
  EXPECT_NEAR(learningRate(s, 109), 0.05, 1e-15);
  EXPECT_DOUBLE_EQ(learningRate(s, 110), 0.0);
  EXPECT_DOUBLE_EQ(learningRate(s, 1000), 0.0);
  // A floor, and an explicit decay_steps shorter than the run.
  LrSchedule f = makeSchedule("wsd", 2.0, 0.5, 0, 40, 1000, 0.5);
  EXPECT_DOUBLE_EQ(learningRate(f, 19), 2.0);
  EXPECT_NEAR(learningRate(f, 30), 1.25, 1e-15);
  EXPECT_DOUBLE_EQ(learningRate(f, 40), 0.5);
  EXPECT_DOUBLE_EQ(learningRate(f, 999), 0.5);
}

TEST(Schedule, ConstantIgnoresDecay) {
  LrSchedule c = makeSchedule("constant", 0.3, 0.0, 0, 5, 100);
  EXPECT_DOUBLE_EQ(learningRate(c, 0), 0.3);
  EXPECT_DOUBLE_EQ(learningRate(c, 50), 0.3);
}

/* A kind without a formula is an error, not cosine: every kind of the train
   settings' table must have its own (test/Unit/contract/TrainSettingsTest.cpp). */
TEST(Schedule, KindWithoutAFormulaIsAnError) {
  LrSchedule s = makeSchedule("cosine", 1.0, 0.0, 0, 10, 10);
  s.kind = "step";
  EXPECT_THROW(learningRate(s, 5), Error);
}

/* warmup_fraction: ceil(fraction x steps) warmup steps, as HF's
   TrainingArguments.get_warmup_steps (math.ceil(steps * warmup_ratio), the
   same double product); 0 keeps the step count. */
TEST(Schedule, WarmupFractionIsTheCeilOfItsShareOfTheSteps) {
  EXPECT_EQ(settings::warmupSteps(0, 0.1, 188), 19);   // 18.8
  EXPECT_EQ(settings::warmupSteps(0, 0.1, 1895), 190);  // 189.5
  EXPECT_EQ(settings::warmupSteps(0, 0.1, 100), 10);   // 0.1 x 100 is exactly 10 in doubles
  EXPECT_EQ(settings::warmupSteps(0, 0.06, 1), 1);     // any fraction of a run warms up at least a step
  EXPECT_EQ(settings::warmupSteps(7, 0.0, 188), 7);
  LrSchedule s = makeSchedule("linear", 1e-3, 0.0, 0, 0, 188, 0, 0.1);
  EXPECT_EQ(s.warmupSteps, 19);
  EXPECT_DOUBLE_EQ(learningRate(s, 19), 1e-3);
  EXPECT_EQ(makeSchedule("linear", 1e-3, 0.0, 0, 100, 188, 0, 0.1).warmupSteps, 10);  // of decay_steps
  EXPECT_THROW(makeSchedule("linear", 1e-3, 0.0, 5, 0, 188, 0, 0.1), Error);            // both
  EXPECT_THROW(makeSchedule("linear", 1e-3, 0.0, 0, 0, 188, 0, 1.0), Error);            // [0, 1)
}

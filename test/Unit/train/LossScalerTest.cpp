/* Tests fp16's dynamic loss scaler against DeepSpeed's DynamicLossScaler rules
   (consecutive hysteresis): the first overflow only counts down with hysteresis 2,
   the second halves; a clean step restores the count; growth after exactly
   `growthInterval` clean steps, counted again from each overflow; the floor stops
   the run with the step in the message; bad configurations; restore. */
#include <gtest/gtest.h>

#include "base/tensor.h"
#include "runtime/train/loss_scaler.h"

using namespace lmrt;

TEST(LossScaler, HysteresisThenHalving) {
  LossScaler s(LossScalerConfig{});  // 2^16, 2000, hysteresis 2, floor 1
  EXPECT_EQ(s.scale(), 65536);
  EXPECT_NE(s.update(true, 1).find("stays"), std::string::npos);
  EXPECT_EQ(s.scale(), 65536);  // the first overflow only counts
  EXPECT_EQ(s.state().hysteresisLeft, 1);
  EXPECT_NE(s.update(true, 2).find("lowered to 32768"), std::string::npos);
  EXPECT_EQ(s.scale(), 32768);
  s.update(true, 3);  // still in a row: halves again
  EXPECT_EQ(s.scale(), 16384);
  EXPECT_EQ(s.update(false, 4), "");  // a clean step restores the count
  EXPECT_EQ(s.state().hysteresisLeft, 2);
  s.update(true, 5);
  EXPECT_EQ(s.scale(), 16384);
  EXPECT_EQ(s.state().overflows, 4);
}

TEST(LossScaler, GrowsAfterTheWindowOfCleanSteps) {
  LossScaler s(LossScalerConfig{8, 3, 1, 1});
  EXPECT_EQ(s.update(false, 1), "");
  EXPECT_EQ(s.update(false, 2), "");
  EXPECT_NE(s.update(false, 3).find("raised to 16"), std::string::npos);  // the 3rd clean step
  s.update(true, 4);                                                     // hysteresis 1: halves at once
  EXPECT_EQ(s.scale(), 8);
  s.update(false, 5);
  s.update(false, 6);
  EXPECT_EQ(s.scale(), 8);  // the window counts from the overflow
  s.update(false, 7);
  EXPECT_EQ(s.scale(), 16);
}

TEST(LossScaler, TheFloorStopsTheRunNamingTheStep) {
  LossScaler s(LossScalerConfig{4, 2000, 1, 1});
  s.update(true, 10);
  EXPECT_EQ(s.scale(), 2);
  s.update(true, 11);
  EXPECT_EQ(s.scale(), 1);
  try {
    s.update(true, 12);
    FAIL() << "no error at the floor";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("step 12"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("floor 1"), std::string::npos) << e.what();
  }
  // A floor between powers of two: the scale stops at it, then the next overflow fails.
  LossScaler f(LossScalerConfig{4, 2000, 1, 3});
  f.update(true, 1);
  EXPECT_EQ(f.scale(), 3);
  EXPECT_THROW(f.update(true, 2), Error);
}

TEST(LossScaler, RestoreContinuesTheSameSequence) {
  LossScaler a(LossScalerConfig{64, 2, 2, 1});
  a.update(true, 1);
  a.update(false, 2);
  LossScaler b(LossScalerConfig{64, 2, 2, 1});
  b.restore(a.state());
  for (int step = 3; step < 12; ++step) {
    const bool overflow = step % 4 == 0;
    a.update(overflow, step);
    b.update(overflow, step);
    ASSERT_EQ(a.scale(), b.scale());
    ASSERT_EQ(a.state().cleanSteps, b.state().cleanSteps);
    ASSERT_EQ(a.state().hysteresisLeft, b.state().hysteresisLeft);
  }
}

TEST(LossScaler, RefusesBadConfigurations) {
  EXPECT_THROW(LossScaler(LossScalerConfig{0, 2000, 2, 1}), Error);
  EXPECT_THROW(LossScaler(LossScalerConfig{4, 2000, 2, 8}), Error);  // floor above the start
  EXPECT_THROW(LossScaler(LossScalerConfig{4, 0, 2, 1}), Error);
  EXPECT_THROW(LossScaler(LossScalerConfig{4, 2000, 0, 1}), Error);
}

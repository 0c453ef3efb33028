/* Tests the metrics JSON line: keys, val_loss only when evaluated, null for
   non-finite numbers. */
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/train/metrics.h"

using namespace lmrt;

TEST(Metrics, FormatsOneJsonObject) {
  StepMetrics m;
  m.step = 12;
  m.loss = 3.5;
  m.lr = 1e-3;
  m.gradNorm = 0.25;
  m.tokensPerS = 5123;
  EXPECT_EQ(metricsJson(m),
            "{\"step\": 12, \"loss\": 3.5, \"lr\": 0.001, \"grad_norm\": 0.25, \"tokens_per_s\": 5123}");
  m.hasValLoss = true;
  m.valLoss = 2.5;
  EXPECT_NE(metricsJson(m).find(", \"val_loss\": 2.5}"), std::string::npos);
  m.loss = NAN;
  EXPECT_NE(metricsJson(m).find("\"loss\": null"), std::string::npos);
}

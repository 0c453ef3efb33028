// `lmrt metrics`' reading of JSON Lines: task inference, the report, and errors
// that name the file and the line.
#include <gtest/gtest.h>

#include <cmath>

#include "base/tensor.h"
#include "runtime/metrics/predictions.h"
#include "../train/TempDir.h"

namespace lmrt::metrics {
namespace {

using lmrt_test::TempDir;
using lmrt_test::writeFile;

std::string errorOf(const std::string &path, const MetricsOptions &options = {}) {
  try {
    computeMetrics(path, options);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

double value(const MetricsReport &r, const std::string &name) {
  for (const MetricValue &m : r.values)
    if (m.name == name) return m.value;
  ADD_FAILURE() << "no metric " << name;
  return 0;
}

TEST(Predictions, InfersTheTask) {
  TempDir dir;
  std::string p = dir.file("p.jsonl");
  writeFile(p, "{\"label\": 1, \"prediction\": 1}\n\n{\"label\": 0, \"prediction\": 1}\n");
  MetricsReport r = computeMetrics(p, {});
  EXPECT_EQ(r.task, Task::Classification);
  EXPECT_EQ(r.records, 2);  // the blank line is skipped
  EXPECT_DOUBLE_EQ(value(r, "accuracy"), 0.5);
  writeFile(p, "{\"label\": 1, \"prediction\": 1}\n{\"label\": 0.5, \"prediction\": 2}\n");
  EXPECT_EQ(computeMetrics(p, {}).task, Task::Regression);
  writeFile(p, "{\"prediction\": \"x\", \"answers\": [\"x\"]}\n");
  EXPECT_EQ(computeMetrics(p, {}).task, Task::Squad);
  writeFile(p, "{\"n\": 4, \"correct\": 1}\n");
  r = computeMetrics(p, {});
  EXPECT_EQ(r.task, Task::PassAtK);
  ASSERT_EQ(r.values.size(), 1u);  // only pass@1: 10 > 4 samples
  EXPECT_DOUBLE_EQ(value(r, "pass@1"), 0.25);
}

TEST(Predictions, MalformedLinesNameFileAndLine) {
  TempDir dir;
  std::string p = dir.file("preds.jsonl");
  writeFile(p, "{\"label\": 1, \"prediction\": 1}\n{\"label\": 1, \"prediction\": \n");
  EXPECT_NE(errorOf(p).find("preds.jsonl:2: JSON error"), std::string::npos) << errorOf(p);
  writeFile(p, "{\"label\": 1, \"prediction\": 1}\n[1, 2]\n");
  EXPECT_NE(errorOf(p).find("preds.jsonl:2: a record is a JSON object, not a array"), std::string::npos) << errorOf(p);
  writeFile(p, "{\"label\": 1, \"prediction\": 1}\n{\"label\": \"1\", \"prediction\": 1}\n");
  MetricsOptions classification;
  classification.task = Task::Classification;
  EXPECT_NE(errorOf(p, classification).find("preds.jsonl:2: 'label' is a string, not an integer"), std::string::npos)
      << errorOf(p, classification);
  writeFile(p, "{\"label\": 1, \"logits\": [0.5, 1.0]}\n{\"label\": 2, \"logits\": [0.5, 1.0]}\n");
  EXPECT_NE(errorOf(p).find("preds.jsonl:2: 'label' 2 is not a class of its 2 logits"), std::string::npos) << errorOf(p);
  writeFile(p, "{\"text\": 1}\n");
  EXPECT_NE(errorOf(p).find("preds.jsonl:1: cannot tell the task"), std::string::npos) << errorOf(p);
  writeFile(p, "\n\n");
  EXPECT_NE(errorOf(p).find("holds no records"), std::string::npos) << errorOf(p);
}

TEST(Predictions, PassAtKAboveTheSamplesIsAnError) {
  TempDir dir;
  std::string p = dir.file("p.jsonl");
  writeFile(p, "{\"n\": 20, \"correct\": 1}\n{\"results\": [true, false, false]}\n");
  MetricsOptions o;
  o.k = {1, 10};
  EXPECT_NE(errorOf(p, o).find("p.jsonl:2: pass@10 needs at least 10 samples a problem, this one has 3"),
            std::string::npos)
      << errorOf(p, o);
  o.k = {1};
  EXPECT_DOUBLE_EQ(value(computeMetrics(p, o), "pass@1"), (1.0 / 20 + 1.0 / 3) / 2);
}

TEST(Predictions, ConstantRegressionIsNaNWithANote) {
  TempDir dir;
  std::string p = dir.file("p.jsonl");
  writeFile(p, "{\"label\": 1.5, \"prediction\": 2}\n{\"label\": 2.5, \"prediction\": 2}\n");
  MetricsReport r = computeMetrics(p, {});
  EXPECT_TRUE(std::isnan(value(r, "pearson")));
  EXPECT_NE(formatTable(r).find("nan"), std::string::npos);
  EXPECT_NE(formatJson(r).find("\"pearson\": null"), std::string::npos) << formatJson(r);
  EXPECT_NE(formatJson(r).find("constant"), std::string::npos);
}

TEST(Predictions, CalibrateOnlyForTheCalibrationTask) {
  TempDir dir;
  std::string p = dir.file("p.jsonl"), v = dir.file("v.jsonl");
  writeFile(p, "{\"label\": 1, \"prediction\": 1}\n");
  writeFile(v, "{\"label\": 1, \"logits\": [0, 1]}\n");
  MetricsOptions o;
  o.task = Task::Classification;
  o.calibrationPath = v;
  EXPECT_NE(errorOf(p, o).find("--calibrate fits a temperature for --task calibration"), std::string::npos);
  writeFile(p, "{\"label\": 1, \"logits\": [0, 3]}\n{\"label\": 0, \"logits\": [0, 3]}\n");
  writeFile(v, "{\"label\": 1, \"logits\": [0, 3]}\n{\"label\": 0, \"logits\": [0, 3]}\n");
  o.task = Task::Auto;  // logits and --calibrate: calibration
  MetricsReport r = computeMetrics(p, o);
  EXPECT_EQ(r.task, Task::Calibration);
  // Right half the time at any confidence: the best temperature flattens to 0.5, at the upper bound.
  EXPECT_GT(value(r, "temperature"), 99.0);
  EXPECT_LT(value(r, "ece_scaled"), 0.02);
}

TEST(Predictions, UnknownTaskIsAnError) { EXPECT_THROW(parseTask("ranking"), Error); }

}  // namespace
}  // namespace lmrt::metrics

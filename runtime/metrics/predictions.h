/* Implements: `lmrt metrics`' reading of predictions and the report it prints:
   a JSON Lines file, one record per example (fields per task in
   docs/runtime.md, "lmrt metrics"), scored by the metrics of this folder. A
   record that is not a JSON object with the task's fields, of the right
   types, is an lmrt::Error naming the file and the line ("preds.jsonl:7:
   'label' is a string, not an integer"); blank lines are skipped. */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lmrt::metrics {

enum class Task { Auto, Classification, Regression, Squad, Calibration, PassAtK, LanguageModel };

/* "classification", "regression", "squad", "calibration", "pass-at-k", "lm";
   anything else is an error listing them. */
Task parseTask(const std::string &name);
const char *taskName(Task task);

struct MetricsOptions {
  Task task = Task::Auto;  // Auto: from the fields of the records (predictions.cpp, inferTask)
  std::vector<int64_t> k;  // pass@k: the k's (empty: 1, and 10 and 100 where every problem has as many samples)
  std::string calibrationPath;  // calibration: the validation predictions T is fitted on (empty: none)
  int bins = 15;                // ECE bins
};

struct MetricValue {
  std::string name;
  double value = 0;
  std::string note;  // why a value is NaN, or what it was computed on
};

struct MetricsReport {
  Task task = Task::Auto;
  std::string path;
  int64_t records = 0;
  std::string summary;  // "3 classes", "12 problems, 200 samples each", ...
  std::vector<MetricValue> values;
};

/* Reads `path` (and options.calibrationPath) and computes the task's metrics. */
MetricsReport computeMetrics(const std::string &path, const MetricsOptions &options);

/* The report as a table ("metric  value" rows after a header line), or as one
   JSON object ({"task", "predictions", "records", "metrics": {name: value|null},
   "notes": {name: note}}). */
std::string formatTable(const MetricsReport &report);
std::string formatJson(const MetricsReport &report);

}  // namespace lmrt::metrics

/* Implements: `lmrt metrics --predictions P.jsonl`: task metrics (accuracy, F1,
   MCC, correlations, calibration, SQuAD, pass@k, perplexity) of predictions a
   model already made, one JSON object a line (runtime/metrics/predictions.h;
   docs/runtime.md, "lmrt metrics"). It needs no plan: predictions from any
   model, ours or another framework's, are scored by the same code. */
#include <cstdio>
#include <memory>

#include "runtime/metrics/predictions.h"
#include "tools/lmrt/commands.h"
#include "tools/lmrt/flags.h"

namespace lmrt {
namespace {

struct Options {
  std::string predictions, task, k, calibrate, format = "table";
  metrics::MetricsOptions metrics;
};

/* "1,10,100" -> {1, 10, 100}; each a decimal integer in [1, 2^31). */
std::vector<int64_t> parseKs(const std::string &text) {
  std::vector<int64_t> ks;
  for (size_t at = 0; at <= text.size();) {
    size_t comma = std::min(text.find(',', at), text.size());
    ks.push_back(parseIntFlag("--k", text.substr(at, comma - at), 1, (int64_t(1) << 31) - 1));
    at = comma + 1;
  }
  return ks;
}

void run(Options &o) {
  if (!o.task.empty()) o.metrics.task = metrics::parseTask(o.task);
  if (!o.k.empty()) o.metrics.k = parseKs(o.k);
  o.metrics.calibrationPath = o.calibrate;
  metrics::MetricsReport report = metrics::computeMetrics(o.predictions, o.metrics);
  std::string text = o.format == "json" ? metrics::formatJson(report) : metrics::formatTable(report);
  std::fputs(text.c_str(), stdout);
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("metrics", "Task metrics (accuracy, F1, MCC, Pearson/Spearman, ECE, SQuAD EM/F1, "
                                            "pass@k, perplexity) of predictions in JSON Lines");
  auto o = std::make_shared<Options>();
  cmd->add_option("--predictions", o->predictions, "JSON Lines, one record per example (fields: docs/runtime.md)")
      ->required();
  cmd->add_option("--task", o->task,
                  "classification | regression | squad | calibration | pass-at-k | lm (default: from the fields)");
  cmd->add_option("--k", o->k, "pass@k: the k's, comma-separated (default 1, and 10 and 100 where every problem "
                               "has that many samples)");
  cmd->add_option("--calibrate", o->calibrate,
                  "calibration: validation predictions to fit the temperature on (JSON Lines, as --predictions)");
  addIntOption(cmd, "--bins", o->metrics.bins, 1, 1000, "Expected calibration error: equal-width bins (default 15)");
  cmd->add_option("--format", o->format, "table (default) or json (one object)")
      ->check(CLI::IsMember({"table", "json"}));
  cmd->callback([o] { run(*o); });
}

RegisterCommand reg("metrics", add);

}  // namespace
}  // namespace lmrt

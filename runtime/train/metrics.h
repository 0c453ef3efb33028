/* Implements: the --metrics file: one JSON object per line per training step,
   {"step", "loss", "lr", "grad_norm", "tokens_per_s"} plus "val_loss" on the
   steps that evaluated. Lines are flushed as written, so a crashed or running
   job can be plotted. */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace lmrt {

struct StepMetrics {
  int64_t step = 0;  // 1-based: the number of optimizer updates done
  double loss = 0, lr = 0, gradNorm = 0, tokensPerS = 0;
  bool hasValLoss = false;
  double valLoss = 0;
};

/* The JSON line (without the newline). */
std::string metricsJson(const StepMetrics &m);

class MetricsWriter {
public:
  explicit MetricsWriter(const std::string &path);  // "" = disabled
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter &) = delete;
  MetricsWriter &operator=(const MetricsWriter &) = delete;
  void write(const StepMetrics &m);

private:
  std::string path_;
  FILE *f_ = nullptr;
};

}  // namespace lmrt

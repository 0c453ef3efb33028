/* Implements: the --metrics file: one JSON object per line per training step,
   {"step", "loss", "lr", "grad_norm", "tokens_per_s"} plus "val_loss" and
   "val_<metric>" for each of the objective's metrics on the steps that
   evaluated. Lines are flushed as written, so a crashed or running
   job can be plotted. A new run does not clobber an earlier run's file (unless
   told to); a resumed run continues the file it recorded in its checkpoint. */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace lmrt {

struct StepMetrics {
  int64_t step = 0;  // 1-based: the number of optimizer updates done
  double loss = 0, lr = 0, gradNorm = 0, tokensPerS = 0;
  bool hasValLoss = false;
  bool skipped = false;  // --on-nan skip dropped this step's update, or fp16's loss scaler (an overflow)
  double lossScale = 0;  // fp16: the step's loss scale (0: none, not written)
  double valLoss = 0;
  std::vector<std::pair<std::string, double>> valMetrics;  // the objective's metrics, plan order
};

/* The JSON line (without the newline). */
std::string metricsJson(const StepMetrics &m);

class MetricsWriter {
public:
  enum class Mode {
    New,        // refuse a non-empty regular file (an earlier run's metrics)
    Overwrite,  // replace it (--overwrite)
    Resume,     // a resumed run: cut the file back to `resumeBytes` and append
  };
  /* "" = disabled. Devices and FIFOs are written as they are in every mode. For
     Resume, the file must hold at least `resumeBytes` bytes whose last line is the
     line of step `resumeStep` (what the checkpoint recorded); lines after it (steps
     the resumed run does again) are dropped. */
  MetricsWriter(const std::string &path, Mode mode = Mode::Overwrite, int64_t resumeBytes = -1,
                int64_t resumeStep = 0);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter &) = delete;
  MetricsWriter &operator=(const MetricsWriter &) = delete;
  void write(const StepMetrics &m);
  /* Bytes in the file so far; -1 when disabled or not a regular file. */
  int64_t bytes() const;

private:
  std::string path_;
  FILE *f_ = nullptr;
  bool regular_ = false;
};

}  // namespace lmrt

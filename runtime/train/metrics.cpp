/* Implements: JSON-lines training metrics (see metrics.h). */
#include "runtime/train/metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include "runtime/lmrt/tensor.h"

namespace lmrt {

namespace {

/* Shortest round-tripping form; JSON has no NaN/Infinity, so those are null. */
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string metricsJson(const StepMetrics &m) {
  std::string s = "{\"step\": " + std::to_string(m.step) + ", \"loss\": " + num(m.loss) +
                  ", \"lr\": " + num(m.lr) + ", \"grad_norm\": " + num(m.gradNorm) +
                  ", \"tokens_per_s\": " + num(m.tokensPerS);
  if (m.hasValLoss) s += ", \"val_loss\": " + num(m.valLoss);
  return s + "}";
}

MetricsWriter::MetricsWriter(const std::string &path) : path_(path) {
  if (path.empty()) return;
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) fail("cannot create metrics file '%s': %s", path.c_str(), std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (f_) std::fclose(f_);
}

void MetricsWriter::write(const StepMetrics &m) {
  if (!f_) return;
  std::string line = metricsJson(m) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    fail("cannot write metrics file '%s': %s", path_.c_str(), std::strerror(errno));
}

}  // namespace lmrt

/* Implements: JSON-lines training metrics (see metrics.h). */
#include "runtime/train/metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tensor.h"

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
  for (const auto &[name, v] : m.valMetrics) s += ", \"val_" + name + "\": " + num(v);
  if (m.lossScale > 0) s += ", \"loss_scale\": " + num(m.lossScale);
  if (m.skipped) s += ", \"skipped\": true";
  return s + "}";
}

MetricsWriter::MetricsWriter(const std::string &path, Mode mode, int64_t resumeBytes, int64_t resumeStep)
    : path_(path) {
  if (path.empty()) return;
  const char *p = path.c_str();
  struct stat st;
  bool exists = ::stat(p, &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail("--metrics '%s' is a directory", p);
  regular_ = !exists || S_ISREG(st.st_mode);
  const char *openMode = "w";
  if (regular_ && exists && mode == Mode::New && st.st_size > 0)
    fail("--metrics '%s' exists (%lld bytes, an earlier run's?); pass --overwrite to replace it, or "
         "--resume to continue that run", p, (long long)st.st_size);
  if (mode == Mode::Resume && regular_) {
    if (!exists || resumeBytes < 0) {
      // The checkpoint's run wrote no metrics here: start the file afresh.
      if (exists && st.st_size > 0)
        fail("--metrics '%s' exists, and the checkpoint's run did not write it; pass --overwrite to "
             "replace it", p);
    } else {
      if (st.st_size < resumeBytes)
        fail("--metrics '%s' has %lld bytes, fewer than the %lld it had at the checkpoint of step %lld "
             "(it was truncated or replaced); pass another --metrics", p, (long long)st.st_size,
             (long long)resumeBytes, (long long)resumeStep);
      // The last line kept must be the checkpoint's step, or this is another file.
      std::string tail;
      if (FILE *r = std::fopen(p, "rb")) {
        int64_t from = std::max<int64_t>(0, resumeBytes - 4096);
        tail.resize((size_t)(resumeBytes - from));
        std::fseek(r, (long)from, SEEK_SET);
        tail.resize(std::fread(tail.data(), 1, tail.size(), r));
        std::fclose(r);
      }
      size_t lineStart = tail.size() >= 2 ? tail.rfind('\n', tail.size() - 2) : std::string::npos;
      std::string last = tail.substr(lineStart == std::string::npos ? 0 : lineStart + 1);
      std::string expect = "{\"step\": " + std::to_string(resumeStep) + ",";
      if (resumeBytes > 0 && last.rfind(expect, 0) != 0)
        fail("--metrics '%s' does not match the checkpoint: its line ending at byte %lld is not that of "
             "step %lld; pass another --metrics", p, (long long)resumeBytes, (long long)resumeStep);
      if (::truncate(p, (off_t)resumeBytes) != 0)
        fail("cannot cut --metrics '%s' back to the checkpoint: %s", p, std::strerror(errno));
      openMode = "a";
    }
  }
  if (!regular_) openMode = "a";  // a device or FIFO: never truncated, never replaced
  f_ = std::fopen(p, openMode);
  if (!f_) fail("cannot open metrics file '%s': %s", p, std::strerror(errno));
  if (regular_) std::fseek(f_, 0, SEEK_END);  // ftell() then counts the bytes in the file
}

int64_t MetricsWriter::bytes() const {
  if (!f_ || !regular_) return -1;
  long at = std::ftell(f_);
  return at < 0 ? -1 : (int64_t)at;
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

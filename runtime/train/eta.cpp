/* Implements: ETA and GFLOP/s of the progress line (see eta.h). */
#include "runtime/train/eta.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lmrt {

std::string formatDuration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  long long s = (long long)seconds;
  char buf[64];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
  return buf;
}

std::string progressTail(int64_t planFlopsPerStep, double stepSeconds, double elapsedSeconds,
                         int64_t stepsDone, int64_t stepsTotal) {
  std::string out;
  char buf[64];
  if (planFlopsPerStep > 0) {
    std::snprintf(buf, sizeof buf, " | %.1f GFLOP/s",
                  double(planFlopsPerStep) * 1e-9 / std::max(stepSeconds, 1e-9));
    out += buf;
  }
  if (stepsDone > 0 && stepsDone < stepsTotal)
    out += " | ETA " + formatDuration(elapsedSeconds / double(stepsDone) * double(stepsTotal - stepsDone));
  return out;
}

}  // namespace lmrt

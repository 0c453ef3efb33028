/* Implements: warmup + constant/cosine learning rates (formulas in schedule.h). */
#include "runtime/train/schedule.h"

#include <algorithm>
#include <cmath>

#include "runtime/lmrt/tensor.h"

namespace lmrt {

LrSchedule makeSchedule(const std::string &kind, double lr, double minLr, int64_t warmup,
                        int64_t decaySteps, int64_t runSteps) {
  LrSchedule s;
  s.kind = kind.empty() ? "constant" : kind;
  if (s.kind != "constant" && s.kind != "cosine")
    fail("plan schedule '%s' is not supported (expected constant or cosine)", kind.c_str());
  // Same bounds as validatePlan: lr = 0 (a frozen run) is allowed.
  if (!(lr >= 0) || !std::isfinite(lr)) fail("plan learning rate %g must be finite and >= 0", lr);
  if (!(minLr >= 0) || minLr > lr)
    fail("plan min_lr %g must be in [0, lr = %g]", minLr, lr);
  if (warmup < 0) fail("plan warmup_steps %lld is negative", (long long)warmup);
  if (decaySteps < 0) fail("plan decay_steps %lld is negative", (long long)decaySteps);
  s.lr = lr;
  s.minLr = minLr;
  s.warmupSteps = warmup;
  s.decaySteps = decaySteps > 0 ? decaySteps : runSteps;
  return s;
}

double learningRate(const LrSchedule &s, int64_t step) {
  if (step < s.warmupSteps) return s.lr * double(step + 1) / double(s.warmupSteps + 1);
  if (s.kind == "constant") return s.lr;
  if (s.decaySteps <= s.warmupSteps) return s.minLr;
  double r = double(step - s.warmupSteps) / double(s.decaySteps - s.warmupSteps);
  r = std::min(1.0, std::max(0.0, r));
  return s.minLr + (s.lr - s.minLr) * 0.5 * (1.0 + std::cos(M_PI * r));
}

}  // namespace lmrt

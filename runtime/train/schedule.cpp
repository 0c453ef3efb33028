/* Implements: warmup + constant/linear/cosine/WSD learning rates (formulas in schedule.h). */
#include "runtime/train/schedule.h"

#include <algorithm>
#include <cmath>

#include "base/tensor.h"

namespace lmrt {

LrSchedule makeSchedule(const std::string &kind, double lr, double minLr, int64_t warmup,
                        int64_t decaySteps, int64_t runSteps, double cooldownFraction) {
  LrSchedule s;
  s.kind = kind.empty() ? "constant" : kind;
  if (s.kind != "constant" && s.kind != "linear" && s.kind != "cosine" && s.kind != "wsd")
    fail("plan schedule '%s' is not supported (expected constant, linear, cosine or wsd)", kind.c_str());
  // Same bounds as validatePlan: lr = 0 (a frozen run) is allowed.
  if (!(lr >= 0) || !std::isfinite(lr)) fail("plan learning rate %g must be finite and >= 0", lr);
  if (!(minLr >= 0) || minLr > lr)
    fail("plan min_lr %g must be in [0, lr = %g]", minLr, lr);
  if (warmup < 0) fail("plan warmup_steps %lld is negative", (long long)warmup);
  if (decaySteps < 0) fail("plan decay_steps %lld is negative", (long long)decaySteps);
  if (s.kind == "wsd" && !(cooldownFraction > 0 && cooldownFraction <= 1))
    fail("plan wsd cooldown_fraction %g must be in (0, 1]", cooldownFraction);
  s.lr = lr;
  s.minLr = minLr;
  s.warmupSteps = warmup;
  s.decaySteps = decaySteps > 0 ? decaySteps : runSteps;
  if (s.kind == "wsd") {
    s.cooldownFraction = cooldownFraction;
    int64_t span = std::max<int64_t>(0, s.decaySteps - warmup);
    s.cooldownSteps = std::max<int64_t>(1, std::llround(cooldownFraction * double(span)));
  }
  return s;
}

double learningRate(const LrSchedule &s, int64_t step) {
  if (step < s.warmupSteps) return s.lr * double(step + 1) / double(s.warmupSteps + 1);
  if (s.kind == "constant") return s.lr;
  if (s.kind == "wsd") {
    int64_t start = std::max(s.warmupSteps, s.decaySteps - s.cooldownSteps);
    if (step < start) return s.lr;
    double r = std::min(1.0, double(step - start) / double(std::max<int64_t>(1, s.decaySteps - start)));
    return s.lr - (s.lr - s.minLr) * r;
  }
  if (s.decaySteps <= s.warmupSteps) return s.minLr;
  double r = double(step - s.warmupSteps) / double(s.decaySteps - s.warmupSteps);
  r = std::min(1.0, std::max(0.0, r));
  if (s.kind == "linear") return s.lr - (s.lr - s.minLr) * r;
  return s.minLr + (s.lr - s.minLr) * 0.5 * (1.0 + std::cos(M_PI * r));
}

}  // namespace lmrt

/* Implements: warmup + constant/linear/cosine/WSD learning rates (formulas in schedule.h). */
#include "runtime/train/schedule.h"

#include <algorithm>
#include <cmath>

#include "base/tensor.h"

namespace lmrt {

LrSchedule makeSchedule(const std::string &kind, double lr, double minLr, int64_t warmup,
                        int64_t decaySteps, int64_t runSteps, double cooldownFraction, double warmupFraction) {
  LrSchedule s;
  s.kind = kind.empty() ? settings::kDefaultSchedule : kind;
  const settings::Kind *schedule = settings::findSchedule(s.kind);
  if (!schedule)
    fail("plan schedule '%s' is not supported (expected %s)", kind.c_str(),
         settings::kindList(settings::schedules(), false).c_str());
  // The plan contract's bounds (lr = 0, a frozen run, is allowed), in its words.
  auto check = [](const settings::Setting &setting, double v, double atMost = settings::kNoLimit) {
    if (!settings::within(setting, v, atMost))
      fail("plan %s = %s %s", setting.field, settings::format(setting, v).c_str(),
           settings::rule(setting, atMost).c_str());
  };
  check(settings::kLr, lr);
  check(settings::kMinLr, minLr, lr);
  check(settings::kWarmup, (double)warmup);
  check(settings::kDecaySteps, (double)decaySteps);
  check(settings::kWarmupFraction, warmupFraction);
  if (warmupFraction > 0 && warmup > 0)
    fail("plan warmup_fraction = %g cannot be combined with warmup_steps = %lld (one or the other)", warmupFraction,
         (long long)warmup);
  warmup = settings::warmupSteps(warmup, warmupFraction, decaySteps > 0 ? decaySteps : runSteps);
  if (settings::takes(*schedule, settings::kCooldown)) check(settings::kCooldown, cooldownFraction);
  s.lr = lr;
  s.minLr = minLr;
  s.warmupSteps = warmup;
  s.decaySteps = decaySteps > 0 ? decaySteps : runSteps;
  if (settings::takes(*schedule, settings::kCooldown)) {
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
  if (s.kind == "cosine") return s.minLr + (s.lr - s.minLr) * 0.5 * (1.0 + std::cos(M_PI * r));
  fail("schedule '%s' has no formula in runtime/train/schedule.cpp", s.kind.c_str());
}

}  // namespace lmrt

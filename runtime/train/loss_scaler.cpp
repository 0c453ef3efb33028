/* Implements: loss_scaler.h. */
#include "runtime/train/loss_scaler.h"

#include <algorithm>
#include <cstdio>

#include "base/format.h"
#include "base/tensor.h"

namespace lmrt {

LossScaler::LossScaler(const LossScalerConfig &config) : config_(config) {
  if (!(config.initialScale > 0) || !(config.minScale > 0) || config.minScale > config.initialScale ||
      config.growthInterval < 1 || config.hysteresis < 1)
    fail("loss scaler: needs 0 < min_scale <= initial scale, a growth interval >= 1 and hysteresis >= 1 (got "
         "scale %g, min %g, interval %lld, hysteresis %lld)",
         config.initialScale, config.minScale, (long long)config.growthInterval, (long long)config.hysteresis);
  state_.scale = config.initialScale;
  state_.hysteresisLeft = config.hysteresis;
}

std::string LossScaler::update(bool overflow, int64_t step) {
  LossScalerState &s = state_;
  if (overflow) {
    ++s.overflows;
    s.cleanSteps = 0;
    if (s.hysteresisLeft > 1) {
      --s.hysteresisLeft;
      return "gradient overflow at loss scale " + formatG(s.scale) + ": step skipped (" +
             std::to_string(s.overflows) + " so far); the scale stays (hysteresis " +
             std::to_string(s.hysteresisLeft) + " left)";
    }
    if (s.scale <= config_.minScale)
      fail("step %lld: the gradients overflow at the loss scale floor %g (min_loss_scale): fp16 cannot represent "
           "this run's gradients; training stopped rather than going on without them (try precision = bf16, a "
           "lower learning rate, or a lower min_loss_scale)",
           (long long)step, config_.minScale);
    const double from = s.scale;
    s.scale = std::max(s.scale / 2, config_.minScale);
    return "gradient overflow at loss scale " + formatG(from) + ": step skipped (" + std::to_string(s.overflows) +
           " so far); scale lowered to " + formatG(s.scale);
  }
  s.hysteresisLeft = config_.hysteresis;  // consecutive hysteresis: a clean step restores it
  if (++s.cleanSteps < config_.growthInterval) return "";
  s.cleanSteps = 0;
  s.scale *= 2;
  return "loss scale raised to " + formatG(s.scale) + " after " + std::to_string(config_.growthInterval) +
         " clean steps";
}

}  // namespace lmrt

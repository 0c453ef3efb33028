/* Implements: fp16's dynamic loss scaling (docs/mixed-precision.md, "fp16"), with
   DeepSpeed's rules (deepspeed/runtime/fp16/loss_scaler.py, DynamicLossScaler with
   consecutive hysteresis). The backward is seeded with the scale, so gradients come
   out multiplied by it and small ones survive fp16's range; the update divides it
   back out. After each step:
   - an overflow (a non-finite gradient): the step is skipped; `hysteresis`
     overflows in a row halve the scale (a first one with hysteresis 2 only counts
     down); an overflow when the scale is already at the floor is an Error naming
     the step, instead of training on silently at a useless scale;
   - a clean step: the hysteresis count is restored, and after `growthInterval`
     clean steps since the last overflow or growth the scale doubles.
   Its whole state is four numbers, kept in checkpoints, so a resume continues
   the same sequence of scales and skips bit for bit. Plain C++ (unit-tested). */
#pragma once
#include <cstdint>
#include <string>

namespace lmrt {

struct LossScalerConfig {
  double initialScale = 65536;  // 2^16
  int64_t growthInterval = 2000;
  int64_t hysteresis = 2;
  double minScale = 1;
};

struct LossScalerState {
  double scale = 65536;
  int64_t hysteresisLeft = 2;  // overflows still allowed before the scale halves
  int64_t cleanSteps = 0;      // clean steps since the last overflow or growth
  int64_t overflows = 0;       // steps skipped for overflow, over the whole run
};

class LossScaler {
public:
  explicit LossScaler(const LossScalerConfig &config);
  const LossScalerConfig &config() const { return config_; }
  const LossScalerState &state() const { return state_; }
  void restore(const LossScalerState &state) { state_ = state; }
  double scale() const { return state_.scale; }
  /* Updates the state after step `step` (for the message); `overflow`: its
     gradients were not finite (the caller skips the update). Throws Error at the
     floor. Returns what happened, for the log: "" for a clean step without growth. */
  std::string update(bool overflow, int64_t step);

private:
  LossScalerConfig config_;
  LossScalerState state_;
};

}  // namespace lmrt

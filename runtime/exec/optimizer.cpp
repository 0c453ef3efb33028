/* Implements: optimizer.h. */
#include "runtime/exec/optimizer.h"

#include <cmath>


namespace lmrt {

OptimizerConfig optimizerConfig(const plan::Plan &plan) {
  const plan::Optimizer &o = plan.train().optimizer();
  if (!settings::findOptimizer(o.kind()))
    fail("plan optimizer '%s' is not supported by lmrt run (it implements %s)", o.kind().c_str(),
         settings::kindList(settings::optimizers(), /*quoted=*/true).c_str());
  OptimizerConfig c;
  c.kind = o.kind();
  c.beta1 = o.beta1();
  c.beta2 = o.beta2();
  c.eps = o.eps();
  c.weightDecay = o.weight_decay();
  c.momentum = o.momentum();
  c.nesterov = o.nesterov();
  c.eps2 = o.eps2();
  c.clipThreshold = o.clip_threshold();
  c.decayRate = o.decay_rate();
  c.relativeStep = o.relative_step();
  c.scaleParameter = o.scale_parameter();
  c.warmupInit = o.warmup_init();
  c.initialAccumulator = o.initial_accumulator_value();
  c.clipValue = plan.train().clip_grad_value();
  return c;
}

std::vector<StateSlot> stateSlots(const OptimizerConfig &c, const Shape &shape) {
  if (c.kind == "adamw" || c.kind == "lamb") return {{c.kind + ".m", shape}, {c.kind + ".v", shape}};
  if (c.kind == "lion") return {{"lion.m", shape}};
  if (c.kind == "adagrad") return {{"adagrad.sum", shape}};
  if (c.kind == "sgd") {
    if (c.momentum == 0) return {};  // plain SGD keeps nothing
    return {{"sgd.momentum", shape}};
  }
  if (c.kind == "adafactor") {
    if (!adafactorFactored(shape)) return {{"adafactor.v", shape}};
    Shape row(shape.begin(), shape.end() - 1);
    Shape col(shape.begin(), shape.end() - 2);
    col.push_back(shape.back());
    return {{"adafactor.row", row}, {"adafactor.col", col}};
  }
  fail("optimizer '%s' has no state layout", c.kind.c_str());
}

double clipScale(double norm, double maxNorm) {
  if (!std::isfinite(norm)) fail("gradient norm is %g (non-finite); training diverged", norm);
  if (maxNorm <= 0) return 1.0;
  double c = maxNorm / (norm + 1e-6);
  return c >= 1.0 ? 1.0 : c;
}

}  // namespace lmrt

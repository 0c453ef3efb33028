/* Implements: optimizer.h. */
#include "runtime/exec/optimizer.h"

#include <cmath>

#include "base/tensor.h"

namespace lmrt {

AdamWConfig adamwConfig(const plan::Plan &plan) {
  const plan::Optimizer &o = plan.train().optimizer();
  if (o.kind() != settings::kDefaultOptimizer)
    fail("plan optimizer '%s' is not supported by lmrt run (it implements %s)", o.kind().c_str(),
         settings::kindList(settings::optimizers(), /*quoted=*/true).c_str());
  AdamWConfig c;
  c.beta1 = o.beta1();
  c.beta2 = o.beta2();
  c.eps = o.eps();
  c.weightDecay = o.weight_decay();
  return c;
}

double clipScale(double norm, double maxNorm) {
  if (!std::isfinite(norm)) fail("gradient norm is %g (non-finite); training diverged", norm);
  if (maxNorm <= 0) return 1.0;
  double c = maxNorm / (norm + 1e-6);
  return c >= 1.0 ? 1.0 : c;
}

}  // namespace lmrt

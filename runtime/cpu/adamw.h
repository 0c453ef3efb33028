/* Implements: AdamW (Loshchilov & Hutter) with decoupled weight decay and bias
   correction, computed like torch.optim.AdamW (foreach=False) so the PyTorch
   parity test can compare updates closely. For update t = 1, 2, ... with
   learning rate lr, per element of each parameter p with gradient g:
     p  <- p * (1 - lr * weight_decay)            only if p.weightDecay
     m  <- m + (1 - beta1) * (g - m)
     v  <- beta2 * v + (1 - beta2) * g * g
     p  <- p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
   The moments m, v are kept in the parameter's own precision (f32 or f64). The element
   is contract/adamw_math.h's, shared with the CUDA kernel, with no FMA contraction: the
   same bits on every CPU and on CUDA.
   A frozen parameter (ParamView::frozen) is skipped: no decay, no update,
   its moments stay zero. */
#pragma once
#include <cstdint>
#include <vector>

#include "base/host_memory.h"
#include "runtime/cpu/param_view.h"
#include "runtime/exec/optimizer.h"

namespace lmrt {


class AdamW {
public:
  explicit AdamW(const AdamWConfig &config);

  /* One update of every parameter with learning rate `lr`. The parameter list
     must be the same (order, types, sizes) at every call; checked. Each gradient
     element is first multiplied by gradScale rounded to its precision (clipping,
     grad_clip.h's clipScale) unless gradScale is 1; the gradients are not written.
     A parameter with a `copy` (param_view.h) also has its new value written there,
     rounded to the copy's type, in the same pass. */
  void step(const std::vector<ParamView> &params, double lr, double gradScale = 1.0);
  int64_t stepCount() const { return t_; }

  /* The moments of parameter i, for checkpoints: m and v, `numel` elements of
     `dtype` each. Empty before the first step() or restoreState(). */
  struct MomentView {
    DType dtype;
    int64_t numel;
    void *m, *v;
  };
  std::vector<MomentView> moments();
  /* Sets up zeroed moments for `params` and the update count `t`, for a resumed
     run to fill through moments() (its next step() is update t + 1). */
  void restoreState(const std::vector<ParamView> &params, int64_t t);
  const AdamWConfig &config() const { return config_; }

private:
  void allocate(const std::vector<ParamView> &params);
  struct Moments {
    DType dtype;
    int64_t numel;
    HostBytes m, v;  // numel elements of dtype each
  };
  AdamWConfig config_;
  int64_t t_ = 0;
  std::vector<Moments> state_;
};

}  // namespace lmrt

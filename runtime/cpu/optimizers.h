/* Implements: the CPU backend's optimizers behind one interface, made from the
   plan's kind (runtime/exec/optimizer.h): AdamW (adamw.h, its own vectorised
   pass) and SGD, LAMB, Lion and Adafactor (optimizers.cpp), with the formulas
   of docs/runtime.md ("Optimizers"). Every one reads each gradient element
   times clipping's factor, then clamped to [-clipValue, clipValue] when
   clipping by value is on; trains a parameter at lr times its group's lrScale;
   decays only parameters marked weightDecay; skips frozen parameters (their
   state stays zero). Each parameter's update is computed by one thread, its
   reductions (LAMB's norms, Adafactor's means and RMS) summed in double in
   element order: the same bits for any thread count, so resume is exact. */
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/cpu/param_view.h"
#include "runtime/exec/optimizer.h"

namespace lmrt {

class CpuOptimizer {
public:
  virtual ~CpuOptimizer() = default;
  /* One update of every parameter with learning rate `lr`; the parameter list
     must be the same at every call (checked). The gradients are not written. */
  virtual void step(const std::vector<ParamView> &params, double lr, double gradScale) = 0;
  virtual int64_t stepCount() const = 0;
  /* Whether step() writes the parameters' `copy` (param_view.h): AdamW's does; the
     others leave it, and the plan's casts make the copies. */
  virtual bool writesCopies() const { return false; }
  /* The state tensors, parameter by parameter, each parameter's in stateSlots()
     order; zeroed on first use. Valid until the next restoreState(). */
  virtual std::vector<void *> state(const std::vector<ParamView> &params) = 0;
  /* Zeroed state and update count `t`, for a resumed run to fill through state(). */
  virtual void restoreState(const std::vector<ParamView> &params, int64_t t) = 0;
};

std::unique_ptr<CpuOptimizer> makeCpuOptimizer(const OptimizerConfig &config);

}  // namespace lmrt

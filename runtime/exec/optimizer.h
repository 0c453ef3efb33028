/* Implements: the optimizer a plan asks for, read once for every backend: its kind
   ("adamw", "sgd", "lamb", "lion", "adafactor" or "adagrad", contract/train_settings.h),
   its hyperparameters and clipping by value, and the state it keeps per
   parameter under the names checkpoints store. The updates themselves are each
   backend's: runtime/cpu/adamw.h and runtime/cpu/optimizers.h on the host,
   runtime/cuda/optimizer.h on a GPU, with the formulas of docs/runtime.md
   ("Optimizers"). */
#pragma once
#include <string>
#include <vector>

#include "base/tensor.h"
#include "contract/plan.pb.h"
#include "contract/train_settings.h"

namespace lmrt {

/* The optimizer's hyperparameters; the defaults are the train settings'
   (contract/train_settings.h). The first four are AdamW's, in the order its
   tests write them. */
struct OptimizerConfig {
  double beta1 = settings::kBeta1.defaultValue;
  double beta2 = settings::kBeta2.defaultValue;
  double eps = settings::kEps.defaultValue;  // Adafactor: eps1
  double weightDecay = settings::kBareModuleWeightDecay;
  std::string kind = settings::kDefaultOptimizer;
  double momentum = 0;   // sgd
  bool nesterov = false; // sgd
  double eps2 = settings::kEps2.defaultValue;                   // adafactor
  double clipThreshold = settings::kClipThreshold.defaultValue; // adafactor
  double decayRate = settings::kDecayRate.defaultValue;         // adafactor
  bool relativeStep = true, scaleParameter = true, warmupInit = false;  // adafactor
  double initialAccumulator = 0;  // adagrad
  double clipValue = 0;  // clip_grad_value: each gradient element clamped to [-c, c]; 0: off
};
using AdamWConfig = OptimizerConfig;

/* The plan's optimizer settings; throws naming the optimizer when the plan asks
   for one lmrt does not implement. */
OptimizerConfig optimizerConfig(const plan::Plan &plan);
inline OptimizerConfig adamwConfig(const plan::Plan &plan) { return optimizerConfig(plan); }

/* One state tensor the optimizer keeps for a parameter: its name prefix
   ("adamw.m": the checkpoint's "adamw.m.<param>") and shape (the parameter's,
   but Adafactor's factored second moments: row statistics of shape[:-1] and
   column statistics of shape[:-2] + shape[-1:]); the parameter's dtype. */
struct StateSlot {
  std::string prefix;
  Shape shape;
};

/* The slots of a parameter of `shape`, in checkpoint order. Every parameter has
   them, frozen ones too (kept zero), so a checkpoint's layout is the plan's. */
std::vector<StateSlot> stateSlots(const OptimizerConfig &c, const Shape &shape);

/* Whether a checkpoint tensor is optimizer state ("<optimizer>.<slot>.<param>"),
   which --init and weight loading skip. */
inline bool isOptimizerStateName(const std::string &name) {
  for (const settings::Kind &k : settings::optimizers())
    if (name.rfind(std::string(k.name) + ".", 0) == 0) return true;
  return false;
}

/* Adafactor factors the second moment of a parameter of rank >= 2 (HF's rule). */
/* Whether the optimizer updates a slice of a parameter as it would the whole tensor, each
   element's update reading that element alone (adamw, sgd, lion): what tensor parallelism and
   ZeRO need of it. LAMB's trust ratio and Adafactor's factored moments read whole tensors. */
inline bool updatesSlices(const OptimizerConfig &c) { return c.kind == "adamw" || c.kind == "sgd" || c.kind == "lion"; }

/* What a ZeRO rank keeps, for the log (both backends): "ZeRO stage 1: rank 0 keeps the optimizer
   state of 11504 of the 23008 parameter elements (its slice of each parameter), and updates them";
   `mine` of the `all` parameter elements are the rank's (docs/distributed.md, "ZeRO"). */
inline std::string describeZero(int64_t stage, int rank, int64_t mine, int64_t all) {
  const std::string head = "ZeRO stage " + std::to_string(stage) + ": rank " + std::to_string(rank) + " keeps ";
  const std::string of = std::to_string(mine) + " of the " + std::to_string(all) + " parameter elements";
  if (stage >= 3)
    return head + of + " (its slice of each parameter, gathered right before each use), their reduced gradients " +
           "and optimizer state, and updates them";
  return head + "the optimizer state " + (stage >= 2 ? "and the reduced gradients " : "") + "of " + of +
         " (its slice of each parameter), and updates them";
}

/* "" when a tensor-parallel plan (mesh tensor = `tensor`) may use the optimizer, else the error
   both backends give. */
inline std::string tensorParallelOptimizerError(const OptimizerConfig &c, int64_t tensor) {
  if (updatesSlices(c)) return "";
  return "tensor parallelism (mesh tensor = " + std::to_string(tensor) +
         ") needs an elementwise optimizer (adamw, sgd or lion), and the plan's is " + c.kind +
         ", whose update reads whole tensors; compile it without a tensor axis";
}

inline bool adafactorFactored(const Shape &shape) { return shape.size() >= 2; }

/* Global-norm gradient clipping's factor, as torch.nn.utils.clip_grad_norm_:
   max_norm / (norm + 1e-6) when max_norm > 0 and the norm exceeds it, else 1. A
   non-finite norm is an Error. Every backend's update multiplies each gradient
   by it as it reads it. */
double clipScale(double norm, double maxNorm);

}  // namespace lmrt

/* Implements: `lmrt run`, the training loop over a loaded plan:
     init params (seed) -> for step 1..N:
       causal batch (seed, step) -> "train_step" -> grad norm -> clip -> AdamW
     -> "eval" every eval_interval steps and at the end -> write weights.
   Prints a progress line per step and a val_loss line per evaluation, and ends
   with the output path and a "memory: peak RSS ... plan predicted ..." line.
   With `dumpDir` it also writes the PyTorch parity dump (see docs/runtime.md).
   With `profile` it ends with the time per kernel of train_step and per loop phase
   (data, gradient norm, clipping + AdamW), averaged over the steps after the first. */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace lmrt {

class Session;

struct TrainOptions {
  std::string planPath;  // for the default output name
  std::string dataDir;
  int64_t steps = 0;
  uint64_t seed = 1;
  int64_t evalInterval = 100;  // 0: evaluate only at the end
  int64_t evalBatches = 10;    // 0: never evaluate
  std::string metricsPath;     // "" = none
  std::string outPath;         // "" = <plan path without .plan>.safetensors
  std::string dumpDir;         // "" = none
  bool profile = false;        // print time per kernel and per loop phase at the end
  std::string tensorboardDir;  // "" = none; else TensorBoard event files (tensorboard.h)
};

struct TrainResult {
  double lastLoss = 0;
  double lastValLoss = 0;  // NaN if never evaluated
  std::string weightsPath;
};

/* The default weights path for a plan: "runs/x.plan" -> "runs/x.safetensors". */
std::string defaultWeightsPath(const std::string &planPath);

TrainResult train(Session &session, const TrainOptions &options, FILE *log = stdout);

}  // namespace lmrt

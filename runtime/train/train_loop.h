/* Implements: `lmrt run`, the training loop over a loaded plan:
     check every path -> init params (seed, or --init weights, or a checkpoint) ->
     for step 1..N:
       K micro-batches (seed, step, rows) -> "train_step" each, gradients averaged
       -> grad norm -> clip -> AdamW -> metrics -> checkpoint every N steps
     -> "eval" every eval_interval steps and at the end -> write weights.
   SIGTERM/SIGINT stop the loop after the current step with a checkpoint
   (docs/runtime.md, "Checkpoints and resume").
   Prints a progress line per step and a val_loss line per evaluation, and ends
   with the output path and a "memory: peak RSS ... plan predicted ..." line.
   With `dumpDir` it also writes the PyTorch parity dump (see docs/runtime.md).
   With `profile` it ends with the time per kernel of train_step and per loop phase
   (data, gradient norm, clipping + AdamW), averaged over the steps after the first. */
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include "contract/train_settings.h"

namespace lmrt {

class Session;

/* Bounds of the run's counts: beyond them a flag is a typo, not a plan. */
constexpr int64_t kMaxSteps = 1000000000000;  // 1e12
constexpr int64_t kMaxAccumulate = int64_t(settings::kAccumulate.hi);  // the train settings' bound

struct TrainOptions {
  std::string planPath;  // for the default output name
  std::string dataDir;
  int64_t steps = 0;     // 0 with resumePath: the checkpoint's run's
  int64_t epochs = 0;    // > 0: steps = passes over an example dataset's records (run_setup.cpp)
  uint64_t seed = 1;
  bool seedGiven = false;      // --seed given (a resume then checks it against the checkpoint)
  int64_t evalInterval = 100;  // 0: evaluate only at the end
  int64_t evalBatches = 10;    // 0: never evaluate
  std::string metricsPath;     // "" = none
  std::string outPath;         // "" = <plan path without .plan>.safetensors
  std::string dumpDir;         // "" = none
  bool profile = false;        // print time per kernel and per loop phase at the end
  std::string checkpointDir;   // "" = none (with resumePath: where it resumed from)
  int64_t checkpointEvery = 0; // 0: only at the end, at --stop-at and on a signal
  int64_t keep = 0;            // checkpoints kept in checkpointDir; 0 = all
  std::string checkpointFormat;  // "sharded" (default with several processes) or "whole" (checkpoint.h)
  std::string resumePath;      // a checkpoint, or a directory of them (the newest valid one)
  std::string initPath;        // start from these weights instead of the plan's init
  std::vector<std::string> initMap;  // --init-map FROM=TO renames (runtime/weights/init_map.h)
  bool initStrict = true;      // every parameter from initPath and every tensor of it used
  int64_t accumulate = 0;      // micro-batches per update; 0 = the plan's train block
  int64_t stopAt = 0;          // stop after this step (checkpointed), as a signal would; 0 = off
  bool overwrite = false;      // replace an earlier run's metrics file and checkpoints
  bool skipNonFinite = false;  // --on-nan skip: a step with a non-finite loss or gradient is
                               // reported (with the op that caused it) and skipped, not fatal
  std::string tensorboardDir;  // "" = none; else TensorBoard event files (tensorboard.h)
};

struct TrainResult {
  double lastLoss = 0;
  double lastValLoss = 0;  // NaN if never evaluated
  std::string weightsPath; // "" when the run stopped early
  int64_t lastStep = 0;    // optimizer updates done
  int stopSignal = 0;      // SIGTERM/SIGINT that stopped the run early, else 0
  bool stoppedEarly = false;
  std::string checkpoint;  // the last checkpoint written, "" if none
};

/* The default weights path for a plan: "runs/x.plan" -> "runs/x.safetensors". */
std::string defaultWeightsPath(const std::string &planPath);

TrainResult train(Session &session, const TrainOptions &options, FILE *log = stdout);

}  // namespace lmrt

/* Implements: what `lmrt run` writes while and after it trains: a progress line
   per step and a val_loss line per evaluation on the log, the metrics file (one
   JSON line a step), TensorBoard events, the parity dump, checkpoints (written,
   pruned to --keep, an earlier run's replaced under --overwrite), the --profile
   report, and at the end the weights and the memory line. */
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/exec/backend.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/metrics.h"
#include "runtime/train/parity_dump.h"
#include "runtime/train/tensorboard.h"
#include "runtime/train/train_loop.h"
#include "runtime/train/train_step.h"

namespace lmrt {

class Session;
class DataFeed;
struct RunSetup;

/* The loop's own phases, summed over the profiled steps. */
struct PhaseTimes {
  double data = 0, trainStep = 0, norm = 0, update = 0, total = 0;
  int64_t steps = 0;
};

class RunOutputs {
public:
  /* Opens the metrics file (continued on a resume), TensorBoard and the dump. */
  RunOutputs(Session &session, DataFeed &data, RunSetup &run, const TrainOptions &options, CheckpointMeta &meta,
             FILE *log);

  ParityDump *dump() { return dump_.get(); }
  /* The step's progress line, its evaluation when one is due, the metrics line
     and TensorBoard events; `seconds` is the step's wall time. */
  void stepDone(int64_t step, const StepOutcome &outcome, double seconds, double elapsedSeconds);
  /* Writes checkpoint `step` unless it is the last one written or there is no
     checkpoint directory; prunes to --keep. */
  void checkpoint(int64_t step);
  const std::string &lastCheckpoint() const { return result_.checkpoint; }

  /* The end of the run: the profile and the skip count; then a stopped run's
     checkpoint and message, or a finished run's checkpoint, weights and memory line. */
  TrainResult finish(int64_t lastStep, int stopSignal, const OpProfile &ops, const PhaseTimes &phases);

private:
  void evaluate(int64_t step, StepMetrics &m);
  Session &session_;
  DataFeed &data_;
  RunSetup &run_;
  const TrainOptions &options_;
  CheckpointMeta &meta_;
  FILE *log_;
  std::unique_ptr<MetricsWriter> metrics_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  std::unique_ptr<ParityDump> dump_;
  TrainResult result_;
  int64_t lastCheckpointStep_ = 0;
  int64_t flopsPerStep_ = 0;  // every micro-batch: the plan's FLOPs are per train_step call
  double tokensPerStep_ = 0;
};

}  // namespace lmrt

/* Implements: one optimizer step of `lmrt run`, on whatever backend the session
   runs: the step's K micro-batches (seed, step, rows) through "train_step", their
   gradients averaged (Backend::accumulateGradients), the global gradient norm,
   clipping's factor, and the optimizer update with the schedule's learning rate.
   A non-finite loss or norm is attributed to the op that first produced it (the
   step re-run with every kernel's outputs checked) and then stops the run, or skips
   the step with --on-nan skip (no update: the optimizer's update count does not
   advance). */
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "base/tensor.h"
#include "runtime/exec/backend.h"
#include "runtime/train/loss_scaler.h"

namespace lmrt {

class Session;
class DataFeed;
class ParityDump;
struct RunSetup;
struct TrainOptions;

/* A data shard that could not be read (changed or truncated under the run): the
   loop keeps what is done in a checkpoint, then stops with this message. In a run
   of several ranks every rank throws it at the same point (agreeOnData,
   distributed.h); on a rank whose own data did not fail (`mine` false) the message
   names the rank that failed, whose message it is to print. */
struct DataFailure : Error {
  explicit DataFailure(const std::string &what, bool mine = true) : Error(what), mine(mine) {}
  bool mine;  // this rank's own data failed
};

struct StepOutcome {
  double loss = 0;      // the mean of the micro-batches' losses
  double gradNorm = 0;  // before clipping (NaN when a micro-batch's loss was not finite)
  double lr = 0;
  bool skipped = false;  // --on-nan skip left this step out, or fp16's loss scaler (an overflow)
  double lossScale = 0;  // fp16: the loss scale the step ran with (0: no loss scaling)
  TensorRef lossRef;     // the last micro-batch's loss tensor (the parity dump's)
  // Seconds spent: cutting batches, running train_step, the norm, the update.
  double dataSeconds = 0, runSeconds = 0, normSeconds = 0, updateSeconds = 0;
};

class TrainStep {
public:
  TrainStep(Session &session, DataFeed &data, const RunSetup &run, const TrainOptions &options, FILE *log);
  /* Runs step `step` (1-based). `nanSkips` counts skipped steps (checkpointed);
     with `profile`, train_step's kernels are timed; with `dump`, the raw
     gradients are captured before the update. Throws DataFailure for unreadable
     data (`staleData`, when not empty, says the data changed under the run: the
     step reads nothing), on every rank when any rank's failed; Error when training
     diverged (without --on-nan skip). */
  StepOutcome run(int64_t step, int64_t &nanSkips, OpProfile *profile, ParityDump *dump,
                  const std::string &staleData = "");
  /* fp16 plans: the dynamic loss scaler (null for other precisions). */
  LossScaler *lossScaler() { return scaler_ ? &*scaler_ : nullptr; }

private:
  /* The step's micro-batch inputs, with fp16's loss scale added. */
  const std::map<std::string, TensorRef> &withLossScale(const std::map<std::string, TensorRef> &inputs, int64_t step);
  std::string attributeNonFinite(int64_t step, int firstMicro);
  Session &session_;
  DataFeed &data_;
  const RunSetup &run_;
  const TrainOptions &options_;
  FILE *log_;
  double maxNorm_;
  std::optional<LossScaler> scaler_;
  float lossScaleValue_ = 0;                    // the loss_scale input's storage
  std::map<std::string, TensorRef> scaled_;     // the inputs with it
  std::set<int64_t> poisonedSteps_;             // LMRT_TEST_OVERFLOW_STEPS (tests only)
};

}  // namespace lmrt

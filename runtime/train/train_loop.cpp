/* Implements: the training loop of `lmrt run` (see train_loop.h): setup
   (run_setup.h), one optimizer step at a time (train_step.h), outputs
   (run_outputs.h), on whatever backend the session runs. */
#include "runtime/train/train_loop.h"

#include <chrono>
#include <csignal>
#include <cstdio>

#include "contract/plan_trust.h"
#include "runtime/comm/communicator.h"
#include "runtime/data/token_source.h"
#include "runtime/exec/session.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/distributed.h"
#include "runtime/train/run_outputs.h"
#include "runtime/train/run_setup.h"
#include "runtime/train/signals.h"
#include "runtime/train/train_step.h"
#include "runtime/weights/weights.h"

namespace lmrt {

std::string defaultWeightsPath(const std::string &planPath) {
  const std::string ext = ".plan";
  std::string base = planPath;
  if (base.size() > ext.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0)
    base.resize(base.size() - ext.size());
  return base + ".safetensors";
}

namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

TrainResult train(Session &s, const TrainOptions &options, FILE *userLog) {
  // Data parallelism (distributed.h): rank 0 writes, the others run quiet.
  const RankInfo ranks = joinRanks(s, options);
  TrainOptions quiet = options;
  quiet.metricsPath.clear(), quiet.tensorboardDir.clear(), quiet.dumpDir.clear(), quiet.profile = false;
  const TrainOptions &o = ranks.writer() ? options : quiet;
  FILE *log = ranks.writer() ? userLog : quietLog();
  if (ranks.tensorRanks > 1)
    std::fprintf(log, "tensor parallel: %s; mesh data = %d x tensor = %d\n", comm::world().describe().c_str(),
                 ranks.ranks, ranks.tensorRanks);
  else if (ranks.ranks > 1)
    std::fprintf(log, "data parallel: %s\n", comm::world().describe().c_str());
  if (std::string zero = s.backend().describeSharding(); !zero.empty()) std::fprintf(log, "%s\n", zero.c_str());
  // The rank whose slices of the split parameters this process holds: its tensor rank,
  // or under ZeRO stage 3 (every parameter split over the data axis) its data rank (on a
  // data x tensor mesh, of its tensor rank's blocks).
  s.setTensorRank(s.plan().train().mesh().zero() >= 3 ? ranks.rank : ranks.tensorRank);
  s.setBlockRank(ranks.tensorRank);
  RunSetup run = planRun(s, o, log, ranks);

  // The plan's batch transform; it checks the inputs, the vocabulary and the splits.
  DataFeed data(s, o.dataDir, run.seed, run.evalOn);
  data.setAccumulate(run.accumulate);
  std::fprintf(log, "%s\n", data.describe().c_str());
  // A plan is native code: what runs, and who vouches for it (docs/plan-format.md, "Trust").
  std::fprintf(log, "plan: %s, %s; kernels: %s\n", s.origin().c_str(), signerOf(s.plan()).c_str(),
               kernelDigests(s.plan()).c_str());
  if (run.evalOn) data.checkValidation();
  // Evaluation: a data-parallel plan's runs no collective, so rank 0's alone is run and
  // reported; a tensor-parallel plan's eval program has the tensor axis's all-reduces, so
  // every rank runs it (each tensor group on the same batches) and rank 0 reports.
  // Under ZeRO stage 3 the eval program gathers the parameters: every rank runs it too.
  if (!ranks.writer() && ranks.tensorRanks == 1 && s.plan().train().mesh().zero() < 3) run.evalOn = false;
  CheckpointMeta meta = startMeta(run, data, o.dataDir);
  const DataWatch watch(data.train(), data.val());
  RunOutputs out(s, data, run, o, meta, log);
  if (s.device().device != "cpu") std::fprintf(log, "device: %s\n", s.backend().describe().c_str());

  // The starting weights: the plan's init, then --init's weights or the checkpoint's state.
  s.initParams(run.seed);
  if (!o.initPath.empty()) {
    const InitReport r = loadWeights(s, o.initPath, InitOptions{parseInitMap(o.initMap), o.initStrict});
    std::fprintf(log, "initialised from %s\n", o.initPath.c_str());
    // LoRA adapters start at their initializer even when strict: say so.
    if (!o.initStrict || !o.initMap.empty() || !r.leftAtInit.empty()) std::fprintf(log, "%s", describeInitReport(r, s.params().size()).c_str());
  }
  if (run.resume) {
    restoreCheckpoint(*run.resume, s);
    std::fprintf(log, "resumed from %s (step %lld of %lld)\n", run.resume->path.c_str(),
                 (long long)run.resume->meta.step, (long long)run.steps);
    run.resume->state = SafetensorsFile();  // the checkpoint's bytes are no longer needed
    run.resume->shards.reset();             // nor its shard files open
  }
  if (ParityDump *dump = out.dump()) dump->writeInit(s), dump->captureSamples(s);

  TrainStep trainStep(s, data, run, o, log);
  LossScaler *scaler = trainStep.lossScaler();  // fp16 plans
  if (scaler) {
    if (meta.lossScaler) scaler->restore(*meta.lossScaler);
    meta.lossScaler = scaler->state();
    std::fprintf(log, "loss scale: %g (fp16, dynamic; docs/mixed-precision.md)\n", scaler->scale());
  }
  StopSignals signals;
  OpProfile ops;
  PhaseTimes phases;
  int stopSignal = 0;
  int64_t lastStep = run.firstStep - 1;
  const auto loopStart = Clock::now();
  for (int64_t step = run.firstStep; step <= run.lastStep; ++step) {
    const bool profiled = o.profile && step > run.firstStep;
    Clock::time_point t0;
    StepOutcome r;
    try {
      std::string changed = watch.changedFile();
      if (!changed.empty()) changed = "data '" + o.dataDir + "' changed under the run ('" + changed + "' was rewritten)";
      t0 = Clock::now();
      r = trainStep.run(step, meta.nanSkips, profiled ? &ops : nullptr, out.dump(), changed);
    } catch (const DataFailure &e) {
      // Keep what is done (every rank is here: trainStep agreed on the failure before
      // any collective), then stop with the message.
      if (step > run.firstStep) out.checkpoint(step - 1);
      std::string message = std::string(e.what()) + "; stopped before step " + std::to_string(step);
      // Rank 0 commits checkpoints; the failed rank, whichever, names its path.
      const std::string checkpoint = fromWriter(ranks, out.lastCheckpoint());
      if (!checkpoint.empty()) message += " (checkpoint " + checkpoint + ")";
      stopOnDataFailure(ranks, message, e.mine);
    }
    double seconds = secondsSince(t0);
    if (profiled) {
      phases.data += r.dataSeconds;
      phases.trainStep += r.runSeconds;
      phases.norm += r.normSeconds;
      phases.update += r.updateSeconds;
      phases.total += seconds;
      phases.steps += 1;
    }
    if (scaler) meta.lossScaler = scaler->state();
    if (ParityDump *dump = out.dump()) dump->writeStep(step, s, data.dumpInputs(), r.lossRef, r.lr);
    out.stepDone(step, r, seconds, secondsSince(loopStart));
    lastStep = step;
    // Every rank stops after the same step, whichever saw the signal.
    const int sig = signals.pending();
    if (anyRank(ranks, sig != 0)) {
      stopSignal = sig ? sig : SIGTERM;
      break;
    }
  }
  return out.finish(lastStep, stopSignal, ops, phases);
}

}  // namespace lmrt

/* Implements: run_outputs.h. */
#include "runtime/train/run_outputs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#include "base/paths.h"
#include "runtime/data/token_source.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/session.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/eta.h"
#include "runtime/train/evaluate.h"
#include "runtime/train/program_io.h"
#include "runtime/train/run_setup.h"
#include "runtime/train/signals.h"
#include "runtime/train/tensor_parallel.h"
#include "runtime/train/threads.h"
#include "runtime/weights/safetensors.h"
#include "runtime/weights/weights.h"

namespace lmrt {
namespace {

/* Resident bytes now (/proc/self/statm), or 0 where it cannot be read. */
int64_t residentBytes() {
  long long pages = 0, resident = 0;
  FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  int n = std::fscanf(f, "%lld %lld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? (int64_t)resident * (int64_t)sysconf(_SC_PAGESIZE) : 0;
}

/* The process before any plan is loaded: the libraries mapped and relocated, which
   the plan's predicted peak leaves out. Read when the program loads. */
const int64_t kStartResident = residentBytes();

int digits(int64_t n) { return (int)std::to_string(n).size(); }

/* The --profile report: kernels of train_step by time, then the loop phases; shares are
   of the whole step (steps 2..N: step 1 pays for first touches of the arena and moments). */
void printProfile(FILE *log, const OpProfile &ops, const PhaseTimes &ph, int64_t planFlops) {
  if (ph.steps == 0) {
    std::fprintf(log, "profile: needs at least 2 steps (the first is not timed)\n");
    return;
  }
  const double n = double(ph.steps), step = ph.total / n;
  std::fprintf(log, "profile: %lld steps, %.2f ms/step, plan %.3f GFLOP/step, %.1f GFLOP/s\n",
               (long long)ph.steps, step * 1e3, planFlops * 1e-9, planFlops * 1e-9 / step);
  std::fprintf(log, "  threads: %s\n", threadSettings().c_str());
  std::fprintf(log, "  %-40s %7s %10s %7s %9s\n", "train_step kernel", "calls", "ms/step", "share", "GFLOP/s");
  std::vector<std::pair<std::string, OpProfile::Entry>> rows;
  for (const auto &[key, e] : ops.ops)
    if (key.rfind("train_step/", 0) == 0) rows.push_back({key.substr(11), e});
  std::sort(rows.begin(), rows.end(),
            [](const auto &a, const auto &b) { return a.second.seconds > b.second.seconds; });
  for (const auto &[name, e] : rows) {
    std::fprintf(log, "  %-40s %7lld %10.3f %6.1f%% ", name.c_str(), (long long)(e.calls / ph.steps),
                 e.seconds / n * 1e3, 100 * e.seconds / ph.total);
    if (e.flops > 0)
      std::fprintf(log, "%9.1f\n", e.flops * 1e-9 / e.seconds);
    else
      std::fprintf(log, "%9s\n", "-");
  }
  double kernels = 0;
  for (const auto &r : rows) kernels += r.second.seconds;
  const std::pair<const char *, double> phases[] = {
      {"train_step (all kernels)", kernels},
      {"train_step (outside kernels)", ph.trainStep - kernels},
      {"data (batch)", ph.data},
      {"gradient norm", ph.norm},
      {"clipping + adamw (one pass)", ph.update},
      {"other (loss read, bookkeeping)", ph.total - ph.trainStep - ph.data - ph.norm - ph.update}};
  std::fprintf(log, "  %-40s %7s %10s %7s\n", "phase", "", "ms/step", "share");
  for (const auto &[name, sec] : phases)
    std::fprintf(log, "  %-40s %7s %10.3f %6.1f%%\n", name, "", sec / n * 1e3, 100 * sec / ph.total);
}

}  // namespace

RunOutputs::RunOutputs(Session &session, DataFeed &data, RunSetup &run, const TrainOptions &o, CheckpointMeta &meta,
                       FILE *log)
    : session_(session), data_(data), run_(run), options_(o), meta_(meta), log_(log) {
  meta_.metricsPath = o.metricsPath;
  if (run.resume && !o.metricsPath.empty() && samePath(o.metricsPath, run.resume->meta.metricsPath))
    metrics_ = std::make_unique<MetricsWriter>(o.metricsPath, MetricsWriter::Mode::Resume,
                                               run.resume->meta.metricsBytes, run.resume->meta.step);
  else
    metrics_ = std::make_unique<MetricsWriter>(
        o.metricsPath, o.overwrite ? MetricsWriter::Mode::Overwrite : MetricsWriter::Mode::New);
  if (char *abs = o.metricsPath.empty() ? nullptr : ::realpath(o.metricsPath.c_str(), nullptr)) {
    meta_.metricsPath = abs;  // a resume from another directory finds the same file
    std::free(abs);
  }
  tensorboard_ = std::make_unique<TensorBoardWriter>(o.tensorboardDir);
  if (!o.dumpDir.empty()) dump_ = std::make_unique<ParityDump>(o.dumpDir);
  result_.lastValLoss = NAN;
  result_.lastStep = run.firstStep - 1;
  lastCheckpointStep_ = run.resume ? run.resume->meta.step : 0;
  flopsPerStep_ = (int64_t)session.plan().flops_per_step() * run.accumulate;
  tokensPerStep_ = data.tokensPerStep() * double(run.accumulate) * double(run.ranks);  // every rank's
}

void RunOutputs::checkpoint(int64_t step) {
  if (lastCheckpointStep_ == step) return;
  if (run_.sharded && !run_.shardDir.empty() && run_.checkpointDir.empty()) {
    // A rank other than 0: its shard of the checkpoint rank 0 commits.
    meta_.step = step;
    meta_.adamwUpdates = session_.backend().optimizerUpdates();
    writeShardedCheckpoint(run_.shardDir, session_, meta_);
    lastCheckpointStep_ = step;
    return;
  }
  if (run_.checkpointDir.empty()) {
    // Under ZeRO and tensor parallelism rank 0's checkpoint gathers every rank's slices.
    if (run_.joinsCheckpoints) LogicalState(session_, true).join(), lastCheckpointStep_ = step;
    return;
  }
  if (run_.clearOldCheckpoints) {
    removeAllCheckpoints(run_.checkpointDir, log_);
    run_.clearOldCheckpoints = false;
  }
  meta_.step = step;
  meta_.adamwUpdates = session_.backend().optimizerUpdates();
  meta_.metricsBytes = metrics_->bytes();
  const auto start = std::chrono::steady_clock::now();
  result_.checkpoint = run_.sharded ? writeShardedCheckpoint(run_.checkpointDir, session_, meta_)
                                    : writeCheckpoint(run_.checkpointDir, session_, meta_);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  lastCheckpointStep_ = step;
  std::fprintf(log_, "checkpoint %s\n", result_.checkpoint.c_str());
  if (options_.profile)
    std::fprintf(log_, "  written in %.3f s (%s)\n", seconds,
                 run_.sharded ? (std::to_string(comm::world().size()) + " shards").c_str() : "whole");
  pruneCheckpoints(run_.checkpointDir, options_.keep, log_);
  std::fflush(log_);
}

/* Mean "eval" loss, and mean of each metric, over the fixed validation batches 0..n-1. */
void RunOutputs::evaluate(int64_t step, StepMetrics &m) {
  m.hasValLoss = true;
  guardBusErrors("data '" + data_.val().path() + "'", [&] {
    EvalScores scores = scoreEval(session_, options_.evalBatches, [&](int64_t i) { return data_.valInputs(i); },
                                  /*requireFinite=*/false);
    m.valLoss = scores.loss;
    m.valMetrics = scores.metrics;
  });
  result_.lastValLoss = m.valLoss;
  std::string shown;
  for (const auto &[name, v] : m.valMetrics) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.4f", v);
    shown += " | " + name + buf;
  }
  std::fprintf(log_, "step %*lld | val_loss %.4f%s\n", digits(run_.steps), (long long)step, m.valLoss, shown.c_str());
}

void RunOutputs::stepDone(int64_t step, const StepOutcome &r, double seconds, double elapsedSeconds) {
  StepMetrics m;
  m.step = step;
  m.loss = r.loss;
  m.lr = r.lr;
  m.gradNorm = r.gradNorm;
  m.tokensPerS = tokensPerStep_ / std::max(seconds, 1e-9);
  m.skipped = r.skipped;
  m.lossScale = r.lossScale;
  char scale[64] = "";
  if (r.lossScale > 0)
    std::snprintf(scale, sizeof scale, " | scale %g%s", r.lossScale, r.skipped ? " (skipped)" : "");
  std::fprintf(log_, "step %*lld/%lld | loss %.4f | lr %.2e | grad_norm %.4f%s | %.0f tok/s%s\n", digits(run_.steps),
               (long long)step, (long long)run_.steps, r.loss, r.lr, r.gradNorm, scale, m.tokensPerS,
               progressTail(flopsPerStep_, seconds, elapsedSeconds, step - run_.firstStep + 1,
                            run_.lastStep - run_.firstStep + 1)
                   .c_str());
  if (run_.evalOn && ((options_.evalInterval > 0 && step % options_.evalInterval == 0) || step == run_.steps))
    evaluate(step, m);
  std::fflush(log_);
  metrics_->write(m);
  tensorboard_->write(m, double(flopsPerStep_) * 1e-9 / std::max(seconds, 1e-9));
  result_.lastLoss = r.loss;
  result_.lastStep = step;
  if (options_.checkpointEvery > 0 && step % options_.checkpointEvery == 0) checkpoint(step);
}

TrainResult RunOutputs::finish(int64_t lastStep, int stopSignal, const OpProfile &ops, const PhaseTimes &phases) {
  result_.stopSignal = stopSignal;
  if (options_.profile) printProfile(log_, ops, phases, session_.plan().flops_per_step());
  if (meta_.nanSkips > 0)
    std::fprintf(log_, "skipped %lld step%s with non-finite values (--on-nan skip)\n", (long long)meta_.nanSkips,
                 meta_.nanSkips == 1 ? "" : "s");
  if (meta_.lossScaler && meta_.lossScaler->overflows > 0)
    std::fprintf(log_, "skipped %lld step%s for fp16 gradient overflow; loss scale now %g\n",
                 (long long)meta_.lossScaler->overflows, meta_.lossScaler->overflows == 1 ? "" : "s",
                 meta_.lossScaler->scale);
  if (lastStep < run_.steps) {  // a signal or --stop-at
    result_.stoppedEarly = true;
    checkpoint(lastStep);
    const char *why = stopSignal == SIGTERM ? "SIGTERM" : stopSignal == SIGINT ? "SIGINT" : "--stop-at";
    if (result_.checkpoint.empty())
      std::fprintf(log_, "stopped by %s after step %lld; nothing saved (no --checkpoint-dir)\n", why,
                   (long long)lastStep);
    else
      std::fprintf(log_, "stopped by %s after step %lld of %lld; continue with --resume %s\n", why,
                   (long long)lastStep, (long long)run_.steps, run_.checkpointDir.c_str());
    std::fflush(log_);
    return result_;
  }
  checkpoint(run_.steps);
  if (run_.outPath.empty()) {  // a rank other than 0 writes nothing
    if (run_.joinsWeights) LogicalState(session_, false).join();  // but joins the gather of the split parameters
    return result_;
  }
  LogicalState(session_, false).write(run_.outPath);  // saveWeights' file, of the logical tensors
  result_.weightsPath = run_.outPath;
  std::fprintf(log_, "wrote %s\n", run_.outPath.c_str());
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  if (int64_t device = session_.backend().deviceBytes())
    std::fprintf(log_, "memory: device %lld bytes allocated by lmrt, peak host RSS %lld bytes (%lld at start), plan "
                 "predicted %lld bytes\n", (long long)device, (long long)ru.ru_maxrss * 1024,
                 (long long)kStartResident, (long long)session_.plan().predicted_peak_bytes());
  else
    std::fprintf(log_, "memory: peak RSS %lld bytes (%lld at start), plan predicted %lld bytes\n",
                 (long long)ru.ru_maxrss * 1024, (long long)kStartResident,
                 (long long)session_.plan().predicted_peak_bytes());
  std::fflush(log_);
  return result_;
}

}  // namespace lmrt

/* Implements: the training loop of `lmrt run` (see train_loop.h). */
#include "runtime/train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "runtime/data/token_source.h"
#include "base/file_io.h"
#include "base/paths.h"
#include "runtime/exec/session.h"
#include "runtime/weights/weights.h"
#include "runtime/cpu/adamw.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/eta.h"
#include "runtime/cpu/grad_clip.h"
#include "runtime/train/metrics.h"
#include "runtime/train/threads.h"
#include "runtime/train/parity_dump.h"
#include "runtime/train/program_io.h"
#include "runtime/train/schedule.h"
#include "runtime/train/signals.h"
#include "runtime/train/tensorboard.h"

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

/* Resident bytes now (/proc/self/statm), or 0 where it cannot be read. */
int64_t residentBytes() {
  long long pages = 0, resident = 0;
  FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  int n = std::fscanf(f, "%lld %lld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? (int64_t)resident * (int64_t)sysconf(_SC_PAGESIZE) : 0;
}

/* The process before any plan is loaded: the libraries mapped and relocated (the
   CUDA libraries lmrt links alone hold about 150 MB), which the plan's predicted
   peak leaves out. Read when the program loads. */
const int64_t kStartResident = residentBytes();

std::vector<ParamView> paramViews(Session &s) {
  std::vector<ParamView> v;
  for (ParamState &p : s.params())
    v.push_back({p.type.dtype, p.value.data(), p.grad.data(), p.type.numel(), p.weightDecay, p.frozen});
  return v;
}

AdamWConfig adamwConfig(const plan::Optimizer &o) {
  if (o.kind() != "adamw")
    fail("plan optimizer '%s' is not supported by lmrt run (it implements \"adamw\")",
         o.kind().c_str());
  AdamWConfig c;
  c.beta1 = o.beta1();
  c.beta2 = o.beta2();
  c.eps = o.eps();
  c.weightDecay = o.weight_decay();
  return c;
}

/* Mean "eval" loss, and mean of each metric, over the fixed validation
   batches 0..n-1. */
void evaluate(Session &s, DataFeed &data, int64_t batches, StepMetrics &m) {
  std::vector<std::string> names = metricNames(findProgram(s, "eval"));
  std::vector<double> sums(names.size(), 0.0);
  double sum = 0;
  for (int64_t i = 0; i < batches; ++i) {
    s.run("eval", data.valInputs(i));
    sum += scalarValue(s.output("eval", "loss"), "eval loss");
    for (size_t k = 0; k < names.size(); ++k)
      sums[k] += scalarValue(s.output("eval", "metric:" + names[k]), names[k].c_str());
  }
  m.valLoss = sum / double(batches);
  m.valMetrics.clear();
  for (size_t k = 0; k < names.size(); ++k) m.valMetrics.push_back({names[k], sums[k] / double(batches)});
}

int digits(int64_t n) { return (int)std::to_string(n).size(); }

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/* The loop's own phases, summed over the profiled steps. */
struct PhaseTimes {
  double data = 0, trainStep = 0, norm = 0, adamw = 0, total = 0;
  int64_t steps = 0;
};

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
      {"clipping + adamw (one pass)", ph.adamw},
      {"other (loss read, bookkeeping)", ph.total - ph.trainStep - ph.data - ph.norm - ph.adamw}};
  std::fprintf(log, "  %-40s %7s %10s %7s\n", "phase", "", "ms/step", "share");
  for (const auto &[name, sec] : phases)
    std::fprintf(log, "  %-40s %7s %10.3f %6.1f%%\n", name, "", sec / n * 1e3, 100 * sec / ph.total);
}

/* Where a run starts and what it must keep matching. */
struct RunSetup {
  int64_t steps = 0, firstStep = 1, stopAt = 0, accumulate = 1;
  uint64_t seed = 1;
  LrSchedule schedule;
  std::string checkpointDir;
  std::unique_ptr<Checkpoint> resume;
};

/* The identity of a shard file, to notice one rewritten under the run. */
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime {};
  static FileStamp of(const std::string &path) {
    struct stat st;
    FileStamp f;
    if (::stat(path.c_str(), &st) != 0) return f;
    f.dev = st.st_dev;
    f.ino = st.st_ino;
    f.size = st.st_size;
    f.mtime = st.st_mtim;
    return f;
  }
  bool operator==(const FileStamp &o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

/* Stamps of every file of a split (llm.c splits span several). */
std::vector<FileStamp> stampsOf(const TokenSource &split) {
  std::vector<FileStamp> stamps;
  for (const TokenFile &f : split.files()) stamps.push_back(FileStamp::of(f.path));
  return stamps;
}

/* The first file of `split` whose stamp is no longer `stamps`', or "". */
std::string changedFile(const TokenSource &split, const std::vector<FileStamp> &stamps) {
  for (size_t i = 0; i < split.files().size(); ++i)
    if (!(FileStamp::of(split.files()[i].path) == stamps[i])) return split.files()[i].path;
  return "";
}

void checkScheduleMatches(const LrSchedule &now, const LrSchedule &was, int64_t steps, int64_t wasSteps) {
  auto differ = [&](const char *what, const std::string &a, const std::string &b) {
    if (a != b)
      fail("the resumed run's schedule differs from the checkpoint's: %s is %s in the checkpoint and %s now "
           "(--steps %lld, the checkpoint's run had --steps %lld); resume with the same --steps",
           what, b.c_str(), a.c_str(), (long long)steps, (long long)wasSteps);
  };
  auto g = [](double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  differ("kind", now.kind, was.kind);
  differ("lr", g(now.lr), g(was.lr));
  differ("min_lr", g(now.minLr), g(was.minLr));
  differ("warmup_steps", std::to_string(now.warmupSteps), std::to_string(was.warmupSteps));
  differ("decay_steps", std::to_string(now.decaySteps), std::to_string(was.decaySteps));
  differ("cooldown_fraction", g(now.cooldownFraction), g(was.cooldownFraction));
}

std::string fmtG(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/* Every micro-batch's gradients summed into `acc`, then their mean left in the
   gradient buffers (where the norm, clipping and AdamW read them). */
template <typename T>
void accumulateInto(T *acc, T *grad, int64_t n, int micro, int k) {
  if (micro == 0) {
    std::copy(grad, grad + n, acc);
  } else if (micro < k - 1) {
    for (int64_t i = 0; i < n; ++i) acc[i] += grad[i];
  } else {
    const T div = T(k);
    for (int64_t i = 0; i < n; ++i) grad[i] = (acc[i] + grad[i]) / div;
  }
}

/* Where the run starts (step 1, or after a checkpoint), how long it runs and with
   which seed, micro-batches and schedule; every flag combination checked. */
RunSetup planRun(Session &s, const TrainOptions &o, FILE *log) {
  const plan::TrainConfig &tc = s.plan().train();
  RunSetup run;
  run.seed = o.seed;
  run.steps = o.steps;
  run.accumulate = o.accumulate > 0 ? o.accumulate : tc.accumulate() > 0 ? tc.accumulate() : 1;
  if (run.accumulate > kMaxAccumulate)
    fail("plan accumulate %lld exceeds %lld", (long long)run.accumulate, (long long)kMaxAccumulate);
  run.checkpointDir = o.checkpointDir;
  if (!o.resumePath.empty()) {
    run.resume = std::make_unique<Checkpoint>(findResumeCheckpoint(o.resumePath, s, log));
    const CheckpointMeta &m = run.resume->meta;
    if (run.steps == 0) run.steps = m.totalSteps;
    if (o.seedGiven && o.seed != m.seed)
      fail("--seed %llu differs from the checkpoint's seed %llu (%s); drop --seed to resume",
           (unsigned long long)o.seed, (unsigned long long)m.seed, run.resume->path.c_str());
    run.seed = m.seed;
    if (run.accumulate != m.accumulate)
      fail("accumulate is %lld now and %lld in the checkpoint %s: a resumed step must see the same micro-batches",
           (long long)run.accumulate, (long long)m.accumulate, run.resume->path.c_str());
    run.firstStep = m.step + 1;
    // A checkpoint at the last step (killed before the weights were written) just
    // writes them; past the last step, the run asked for is shorter than the one done.
    if (m.step > run.steps)
      fail("checkpoint %s is at step %lld, past --steps %lld", run.resume->path.c_str(), (long long)m.step,
           (long long)run.steps);
    if (run.checkpointDir.empty())  // keep checkpointing where the run came from
      run.checkpointDir = samePath(run.resume->path, o.resumePath) ? parentDirectory(o.resumePath) : o.resumePath;
  }
  if (run.steps < 1) fail("--steps must be at least 1 (got %lld)", (long long)run.steps);
  if (run.steps > kMaxSteps) fail("--steps %lld exceeds %lld", (long long)run.steps, (long long)kMaxSteps);
  run.stopAt = o.stopAt;
  if (run.stopAt > 0 && run.stopAt < run.firstStep)
    fail("--stop-at %lld is before the first step of this run (%lld)", (long long)run.stopAt,
         (long long)run.firstStep);
  if (run.stopAt > 0 && run.checkpointDir.empty())
    fail("--stop-at needs --checkpoint-dir: stopping early keeps the run in a checkpoint");
  if ((o.checkpointEvery > 0 || o.keep > 0) && run.checkpointDir.empty())
    fail("--checkpoint-every and --keep need --checkpoint-dir (where the checkpoints go)");
  if (!o.dumpDir.empty() && (run.resume || run.accumulate > 1))
    fail("--dump-dir records a whole run from its initial weights, one batch a step: it cannot be combined "
         "with --resume or accumulate > 1");
  const plan::Schedule &ps = tc.schedule();
  run.schedule = makeSchedule(ps.kind(), tc.optimizer().lr(), ps.min_lr(), ps.warmup_steps(), ps.decay_steps(),
                              run.steps, ps.kind() == "wsd" ? ps.cooldown_fraction() : 0.2);
  if (run.resume)
    checkScheduleMatches(run.schedule, run.resume->meta.schedule, run.steps, run.resume->meta.totalSteps);
  return run;
}

/* Every path the run names, before any work (docs/runtime.md §9): outputs may not be
   inputs, must be writable, and an earlier run's checkpoints are not replaced
   without --overwrite. Returns whether they are to be replaced (at this run's first
   checkpoint). */
bool checkRunPaths(const TrainOptions &o, const RunSetup &run, const std::string &outPath, FILE *log) {
  std::string dataDir = o.dataDir.empty() || o.dataDir.back() == '/' ? o.dataDir : o.dataDir + "/";
  std::vector<NamedPath> inputs = {{"the plan", o.planPath},
                                   {"--data's train.bin", dataDir + "train.bin"},
                                   {"--data's val.bin", dataDir + "val.bin"},
                                   {"--data's meta.json", dataDir + "meta.json"},
                                   {"--init", o.initPath}};
  if (run.resume) {
    inputs.push_back({"the checkpoint's state", run.resume->path + "/state.safetensors"});
    inputs.push_back({"the checkpoint's metadata", run.resume->path + "/meta.json"});
  }
  refuseOverlappingPaths({{"--out", outPath}, {"--metrics", o.metricsPath}}, inputs);
  removeStaleTemp(outPath, log);
  checkOutputFile({"--out", outPath});
  if (!o.metricsPath.empty()) checkOutputFile({"--metrics", o.metricsPath});
  if (!o.dumpDir.empty()) checkOutputDirectory({"--dump-dir", o.dumpDir});
  bool clearOldCheckpoints = false;
  if (!run.checkpointDir.empty()) {
    checkOutputDirectory({"--checkpoint-dir", run.checkpointDir});
    removeStaleCheckpointTemps(run.checkpointDir, log);
    if (!run.resume && !listCheckpoints(run.checkpointDir).empty()) {
      if (!o.overwrite)
        fail("--checkpoint-dir '%s' already holds checkpoints of an earlier run; continue it with --resume %s, "
             "or pass --overwrite to replace them", run.checkpointDir.c_str(), run.checkpointDir.c_str());
      clearOldCheckpoints = true;  // only once this run has a checkpoint of its own
    }
  }
  return clearOldCheckpoints;
}

}  // namespace

TrainResult train(Session &s, const TrainOptions &o, FILE *log) {
  if (o.evalInterval < 0) fail("--eval-interval must be >= 0 (got %lld)", (long long)o.evalInterval);
  if (o.evalBatches < 0) fail("--eval-batches must be >= 0 (got %lld)", (long long)o.evalBatches);
  if (o.checkpointEvery < 0) fail("--checkpoint-every must be >= 0 (got %lld)", (long long)o.checkpointEvery);
  if (o.keep < 0) fail("--keep must be >= 0 (got %lld)", (long long)o.keep);
  if (o.stopAt < 0) fail("--stop-at must be >= 0 (got %lld)", (long long)o.stopAt);
  if (o.accumulate < 0 || o.accumulate > kMaxAccumulate)
    fail("--accumulate must be in [1, %lld] (got %lld)", (long long)kMaxAccumulate, (long long)o.accumulate);
  if (!o.resumePath.empty() && !o.initPath.empty())
    fail("--init and --resume exclude each other: a resumed run continues from its checkpoint's weights");
  const plan::Plan &plan = s.plan();
  const plan::TrainConfig &tc = plan.train();
  AdamW adamw(adamwConfig(tc.optimizer()));
  bool evalOn = o.evalBatches > 0;  // validatePlan guarantees an "eval" program
  RunSetup run = planRun(s, o, log);
  std::string outPath = o.outPath.empty() ? defaultWeightsPath(o.planPath) : o.outPath;
  bool clearOldCheckpoints = checkRunPaths(o, run, outPath, log);

  // --- data -----------------------------------------------------------------------------
  // The plan's batch transform; it checks the inputs, the vocabulary and the splits.
  DataFeed data(s, o.dataDir, run.seed, evalOn);
  std::fprintf(log, "%s\n", data.describe().c_str());
  if (evalOn) data.checkValidation();
  CheckpointMeta meta;
  meta.seed = run.seed;
  meta.totalSteps = run.steps;
  meta.accumulate = run.accumulate;
  meta.schedule = run.schedule;
  meta.trainTokens = data.train().size();
  meta.valTokens = data.val().size();
  meta.trainFingerprint = dataFingerprint(data.train());
  meta.valFingerprint = dataFingerprint(data.val());
  if (run.resume) meta.nanSkips = run.resume->meta.nanSkips;
  if (run.resume) {
    const CheckpointMeta &m = run.resume->meta;
    if (m.trainTokens != meta.trainTokens || m.valTokens != meta.valTokens ||
        m.trainFingerprint != meta.trainFingerprint || m.valFingerprint != meta.valFingerprint)
      fail("--data '%s' is not the data of checkpoint %s: train.bin has %llu tokens (fingerprint %016llx), the "
           "checkpoint's run had %llu (%016llx); val.bin %llu (%016llx) vs %llu (%016llx)",
           o.dataDir.c_str(), run.resume->path.c_str(), (unsigned long long)meta.trainTokens,
           (unsigned long long)meta.trainFingerprint, (unsigned long long)m.trainTokens,
           (unsigned long long)m.trainFingerprint, (unsigned long long)meta.valTokens,
           (unsigned long long)meta.valFingerprint, (unsigned long long)m.valTokens,
           (unsigned long long)m.valFingerprint);
  }
  const std::vector<FileStamp> trainStamps = stampsOf(data.train()), valStamps = stampsOf(data.val());

  // --- outputs that are opened now ------------------------------------------------------
  meta.metricsPath = o.metricsPath;
  std::unique_ptr<MetricsWriter> metrics;
  if (run.resume && !o.metricsPath.empty() && samePath(o.metricsPath, run.resume->meta.metricsPath))
    metrics = std::make_unique<MetricsWriter>(o.metricsPath, MetricsWriter::Mode::Resume,
                                              run.resume->meta.metricsBytes, run.resume->meta.step);
  else
    metrics = std::make_unique<MetricsWriter>(
        o.metricsPath, o.overwrite ? MetricsWriter::Mode::Overwrite : MetricsWriter::Mode::New);
  if (char *abs = o.metricsPath.empty() ? nullptr : ::realpath(o.metricsPath.c_str(), nullptr)) {
    meta.metricsPath = abs;  // a resume from another directory finds the same file
    std::free(abs);
  }
  TensorBoardWriter tensorboard(o.tensorboardDir);
  std::unique_ptr<ParityDump> dump;
  if (!o.dumpDir.empty()) dump = std::make_unique<ParityDump>(o.dumpDir);

  // --- the starting weights -------------------------------------------------------------
  s.initParams(run.seed);
  if (!o.initPath.empty()) {
    loadWeights(s, o.initPath);
    std::fprintf(log, "initialised from %s\n", o.initPath.c_str());
  }
  if (run.resume) {
    restoreCheckpoint(*run.resume, s, adamw);
    std::fprintf(log, "resumed from %s (step %lld of %lld)\n", run.resume->path.c_str(),
                 (long long)run.resume->meta.step, (long long)run.steps);
    run.resume->state = SafetensorsFile();  // the checkpoint's bytes are no longer needed
  }
  if (dump) dump->writeInit(s), dump->captureSamples(s);
  std::vector<ParamView> views = paramViews(s);
  const int64_t rows = data.rows();
  std::vector<HostBytes> accBuf;
  if (run.accumulate > 1)
    for (ParamState &p : s.params()) accBuf.emplace_back(p.grad.size());
  const double tokensPerStep = data.tokensPerStep() * double(run.accumulate);
  // GFLOP/s and ETA count every micro-batch: the plan's FLOPs are per train_step call.
  const int64_t flopsPerStep = (int64_t)plan.flops_per_step() * run.accumulate;
  const int w = digits(run.steps);
  TrainResult result;
  result.lastValLoss = NAN;
  result.lastStep = run.firstStep - 1;
  int64_t lastCheckpoint = run.resume ? run.resume->meta.step : 0;

  auto checkpoint = [&](int64_t step) {
    if (run.checkpointDir.empty() || lastCheckpoint == step) return;
    if (clearOldCheckpoints) {
      removeAllCheckpoints(run.checkpointDir, log);
      clearOldCheckpoints = false;
    }
    meta.step = step;
    meta.adamwUpdates = adamw.stepCount();
    meta.metricsBytes = metrics->bytes();
    result.checkpoint = writeCheckpoint(run.checkpointDir, s, adamw, meta);
    lastCheckpoint = step;
    std::fprintf(log, "checkpoint %s\n", result.checkpoint.c_str());
    pruneCheckpoints(run.checkpointDir, o.keep, log);
    std::fflush(log);
  };
  // A shard that changed under the run: keep what is done, then stop with a message.
  auto dataFailure = [&](int64_t step, const std::string &what) {
    if (step > run.firstStep) checkpoint(step - 1);
    fail("%s; stopped before step %lld%s", what.c_str(), (long long)step,
         result.checkpoint.empty() ? "" : (" (checkpoint " + result.checkpoint + ")").c_str());
  };

  // NaN attribution: which kernel first produced a non-finite value in this step.
  // The step is run again from its start (the parameters are untouched until AdamW),
  // each kernel's outputs checked, from micro-batch `firstMicro` on.
  auto attributeNonFinite = [&](int64_t step, int firstMicro) -> std::string {
    NonFiniteValue v;
    s.setNonFiniteCheck(&v);
    for (int micro = firstMicro; micro < run.accumulate && !v.found; ++micro) {
      s.run("train_step", data.trainInputs(step - 1, (uint64_t)micro * (uint64_t)rows));
    }
    s.setNonFiniteCheck(nullptr);
    if (!v.found)
      return "re-running the step with every kernel's outputs checked found no non-finite value (the "
             "gradient norm overflowed)";
    std::string op = "op '" + v.op + "'" + (v.loc.empty() ? "" : " at " + v.loc) + " (" + v.program + " step " +
                     std::to_string(v.step) + ")";
    if (v.tensor.rfind("parameter", 0) == 0)
      return "the " + v.tensor + " holds " + fmtG(v.value) + " at element " + std::to_string(v.element) +
             " (an earlier update made it non-finite), first read by " + op;
    return "the first non-finite value (" + fmtG(v.value) + " at element " + std::to_string(v.element) + " of " +
           v.tensor + ") comes from " + op;
  };

  StopSignals signals;
  OpProfile ops;
  PhaseTimes phases;
  const auto loopStart = Clock::now();
  const int64_t lastStep = run.stopAt > 0 ? std::min(run.stopAt, run.steps) : run.steps;
  for (int64_t step = run.firstStep; step <= lastStep; ++step) {
    const bool profiled = o.profile && step > run.firstStep;
    std::string changed = changedFile(data.train(), trainStamps);
    if (changed.empty()) changed = changedFile(data.val(), valStamps);
    if (!changed.empty())
      dataFailure(step, "data '" + o.dataDir + "' changed under the run ('" + changed + "' was rewritten)");
    auto t0 = Clock::now();
    double loss = 0, dataSeconds = 0, runSeconds = 0;
    TensorRef lossRef;
    int badMicro = -1;  // the micro-batch whose loss was not finite
    const std::map<std::string, TensorRef> *inputs = nullptr;
    for (int micro = 0; micro < run.accumulate; ++micro) {
      auto m0 = Clock::now();
      try {
        guardBusErrors("data '" + data.train().path() + "'", [&] {
          inputs = &data.trainInputs(step - 1, (uint64_t)micro * (uint64_t)rows);
        });
      } catch (const Error &e) {
        dataFailure(step, e.what());
      }
      auto m1 = Clock::now();
      s.setProfile(profiled ? &ops : nullptr);
      s.run("train_step", *inputs);
      s.setProfile(nullptr);
      auto m2 = Clock::now();
      dataSeconds += std::chrono::duration<double>(m1 - m0).count();
      runSeconds += std::chrono::duration<double>(m2 - m1).count();
      lossRef = s.output("train_step", "loss");
      double l = scalarValue(lossRef, "train_step loss");
      loss += l;
      if (!std::isfinite(l)) {
        badMicro = micro;
        break;
      }
      if (run.accumulate > 1)
        for (size_t i = 0; i < views.size(); ++i) {
          const ParamView &v = views[i];
          if (v.dtype == DType::F32)
            accumulateInto((float *)accBuf[i].data(), (float *)v.grad, v.numel, micro, (int)run.accumulate);
          else
            accumulateInto((double *)accBuf[i].data(), (double *)v.grad, v.numel, micro, (int)run.accumulate);
        }
    }
    loss /= double(run.accumulate);
    auto t3 = Clock::now();
    double norm = badMicro >= 0 ? NAN : globalGradNorm(views);
    auto t4 = Clock::now();
    if (dump) dump->captureGradients(s);
    double lr = learningRate(run.schedule, step - 1);
    bool skipped = false;
    if (!std::isfinite(loss) || !std::isfinite(norm)) {
      std::string why = "step " + std::to_string(step) + ": loss " + fmtG(loss) + ", gradient norm " + fmtG(norm) +
                        (badMicro >= 0 && run.accumulate > 1 ? " (micro-batch " + std::to_string(badMicro) + ")" : "") +
                        "; " + attributeNonFinite(step, std::max(badMicro, 0));
      if (!o.skipNonFinite) fail("%s; training diverged (try a lower learning rate, or --on-nan skip)", why.c_str());
      skipped = true;
      ++meta.nanSkips;
      std::fprintf(log, "%s; step skipped (--on-nan skip, %lld so far)\n", why.c_str(), (long long)meta.nanSkips);
    }
    auto t5 = Clock::now();
    if (!skipped) {
      double clip = clipScale(norm, tc.clip_grad_norm());
      adamw.step(views, lr, clip);  // clipping happens inside AdamW's pass
    }
    double seconds = secondsSince(t0);
    if (profiled) {
      phases.data += dataSeconds;
      phases.trainStep += runSeconds;
      phases.norm += std::chrono::duration<double>(t4 - t3).count();
      phases.adamw += secondsSince(t5);
      phases.total += seconds;
      phases.steps += 1;
    }
    if (dump) dump->writeStep(step, s, data.dumpInputs(), lossRef, lr);

    StepMetrics m;
    m.step = step;
    m.loss = loss;
    m.lr = lr;
    m.gradNorm = norm;
    m.tokensPerS = tokensPerStep / std::max(seconds, 1e-9);
    m.skipped = skipped;
    std::fprintf(log, "step %*lld/%lld | loss %.4f | lr %.2e | grad_norm %.4f | %.0f tok/s%s\n", w,
                 (long long)step, (long long)run.steps, loss, lr, norm, m.tokensPerS,
                 progressTail(flopsPerStep, seconds, secondsSince(loopStart), step - run.firstStep + 1,
                              lastStep - run.firstStep + 1).c_str());
    if (evalOn && ((o.evalInterval > 0 && step % o.evalInterval == 0) || step == run.steps)) {
      m.hasValLoss = true;
      guardBusErrors("data '" + data.val().path() + "'", [&] {
        evaluate(s, data, o.evalBatches, m);
      });
      result.lastValLoss = m.valLoss;
      std::string shown;
      for (const auto &[name, v] : m.valMetrics) {
        char buf[64];
        std::snprintf(buf, sizeof buf, " %.4f", v);
        shown += " | " + name + buf;
      }
      std::fprintf(log, "step %*lld | val_loss %.4f%s\n", w, (long long)step, m.valLoss, shown.c_str());
    }
    std::fflush(log);
    metrics->write(m);
    tensorboard.write(m, double(flopsPerStep) * 1e-9 / std::max(seconds, 1e-9));
    result.lastLoss = loss;
    result.lastStep = step;
    if (o.checkpointEvery > 0 && step % o.checkpointEvery == 0) checkpoint(step);
    if (int sig = signals.pending()) {
      result.stopSignal = sig;
      break;
    }
  }

  if (o.profile) printProfile(log, ops, phases, plan.flops_per_step());
  if (meta.nanSkips > 0)
    std::fprintf(log, "skipped %lld step%s with non-finite values (--on-nan skip)\n", (long long)meta.nanSkips,
                 meta.nanSkips == 1 ? "" : "s");
  if (result.lastStep < run.steps) {  // a signal or --stop-at
    result.stoppedEarly = true;
    checkpoint(result.lastStep);
    const char *why = result.stopSignal == SIGTERM ? "SIGTERM" : result.stopSignal == SIGINT ? "SIGINT" : "--stop-at";
    if (result.checkpoint.empty())
      std::fprintf(log, "stopped by %s after step %lld; nothing saved (no --checkpoint-dir)\n", why,
                   (long long)result.lastStep);
    else
      std::fprintf(log, "stopped by %s after step %lld of %lld; continue with --resume %s\n", why,
                   (long long)result.lastStep, (long long)run.steps, run.checkpointDir.c_str());
    std::fflush(log);
    return result;
  }
  checkpoint(run.steps);
  saveWeights(s, outPath);
  result.weightsPath = outPath;
  std::fprintf(log, "wrote %s\n", outPath.c_str());
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::fprintf(log, "memory: peak RSS %lld bytes (%lld at start), plan predicted %lld bytes\n",
               (long long)ru.ru_maxrss * 1024, (long long)kStartResident, (long long)plan.predicted_peak_bytes());
  std::fflush(log);
  return result;
}

}  // namespace lmrt

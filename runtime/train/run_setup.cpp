/* Implements: run_setup.h. */
#include "runtime/train/run_setup.h"


#include "base/file_io.h"
#include "base/paths.h"
#include "contract/contract.h"
#include "contract/plan.pb.h"
#include "runtime/comm/communicator.h"
#include "runtime/data/example_batches.h"
#include "runtime/data/examples.h"
#include "runtime/data/token_source.h"
#include "runtime/exec/optimizer.h"
#include "runtime/exec/session.h"
#include "runtime/train/data_feed.h"
#include "runtime/train/parity_dump.h"
#include "runtime/weights/init_map.h"
#include "runtime/weights/safetensors.h"

namespace lmrt {
namespace {

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

void checkCounts(const TrainOptions &o) {
  if (o.evalInterval < 0) fail("--eval-interval must be >= 0 (got %lld)", (long long)o.evalInterval);
  if (o.evalBatches < 0) fail("--eval-batches must be >= 0 (got %lld)", (long long)o.evalBatches);
  if (o.checkpointEvery < 0) fail("--checkpoint-every must be >= 0 (got %lld)", (long long)o.checkpointEvery);
  if (o.keep < 0) fail("--keep must be >= 0 (got %lld)", (long long)o.keep);
  if (o.stopAt < 0) fail("--stop-at must be >= 0 (got %lld)", (long long)o.stopAt);
  if (o.accumulate < 0 || o.accumulate > kMaxAccumulate)
    fail("--accumulate must be in [1, %lld] (got %lld)", (long long)kMaxAccumulate, (long long)o.accumulate);
  if (!o.resumePath.empty() && !o.initPath.empty())
    fail("--init and --resume exclude each other: a resumed run continues from its checkpoint's weights");
  if (o.initPath.empty() && (!o.initMap.empty() || !o.initStrict))
    fail("--init-map and --init-strict say how to read --init's weights, and there is no --init");
  parseInitMap(o.initMap);  // a malformed rename fails now, before any work
}

/* Where the run starts (step 1, or after a checkpoint), how long it runs and with
   which seed, micro-batches and schedule; every flag combination checked. */
void planSteps(RunSetup &run, Session &s, const TrainOptions &o, FILE *log) {
  const plan::TrainConfig &tc = s.plan().train();
  run.seed = o.seed;
  run.steps = o.steps;
  run.accumulate = o.accumulate > 0 ? o.accumulate : tc.accumulate() > 0 ? tc.accumulate() : 1;
  if (run.accumulate > kMaxAccumulate)
    fail("plan accumulate %lld exceeds %lld", (long long)run.accumulate, (long long)kMaxAccumulate);
  run.checkpointDir = o.checkpointDir;
  // The plan's epochs (a recipe's train block) where no flag says how long.
  const int64_t epochs = o.epochs > 0 ? o.epochs : o.steps == 0 && o.resumePath.empty() ? tc.epochs() : 0;
  if (epochs == 0 && o.steps == 0 && o.resumePath.empty())
    fail("--steps is required (it may be left out only with --resume; --epochs N for example datasets, or a plan "
         "whose train block sets epochs)");
  if (epochs > 0) {
    // An epoch is one pass over the records (example_batches.h); the last step
    // may read into the next pass's order to fill its batch.
    const plan::DataConfig &dc = s.plan().data();
    ExampleTask task;
    if (!exampleTask(dc.transform(), task))
      fail("--epochs counts passes over an example dataset's records, and this plan's transform '%s' samples "
           "token windows; give --steps", dc.transform().c_str());
    ExampleShard shard(o.dataDir + "/train.examples");
    const uint64_t perStep = (uint64_t)dc.batch() * (uint64_t)run.accumulate;
    if (task == ExampleTask::Span && contract::transformParam(dc, "doc_stride") != 0 &&
        contract::transformParam(dc, "pack") == 0) {
      // An epoch is one pass over the features (a long context's windows).
      ExampleBatcher b(o.dataDir, task, dc.batch(), dc.seq(), 0, run.seed);
      b.setMaxQuestion((int64_t)contract::transformParam(dc, "max_question"));
      b.setDocStride((int64_t)contract::transformParam(dc, "doc_stride"));
      run.steps = (int64_t)((epochs * b.trainUnits() + perStep - 1) / perStep);
      std::fprintf(log, "epochs: %lld%s x %llu records in %llu windows (doc_stride %lld), %llu a step: %lld steps\n",
                   (long long)epochs, o.epochs > 0 ? "" : " (the plan's)", (unsigned long long)shard.records(),
                   (unsigned long long)b.trainUnits(), (long long)b.docStride(), (unsigned long long)perStep,
                   (long long)run.steps);
    } else if (contract::transformParam(dc, "pack") != 0) {
      // Packed rows: each epoch's order packs into its own count of rows.
      const int64_t classes = task == ExampleTask::Classify || task == ExampleTask::Tokens
                                  ? (int64_t)contract::transformParam(dc, "classes")
                                  : 0;
      ExampleBatcher b(o.dataDir, task, dc.batch(), dc.seq(), classes, run.seed);
      if (task == ExampleTask::Seq2Seq) b.setTargetSeq((int64_t)contract::transformParam(dc, "target_seq"));
      if (task == ExampleTask::Span) {
        b.setMaxQuestion((int64_t)contract::transformParam(dc, "max_question"));
        b.setDocStride((int64_t)contract::transformParam(dc, "doc_stride"));
      }
      b.setPack(true);
      const uint64_t rows = b.trainRowsOfEpochs((uint64_t)epochs);
      run.steps = (int64_t)((rows + perStep - 1) / perStep);
      // span with a doc stride packs the windows.
      const std::string windows = b.docStride() ? " in " + std::to_string(b.trainUnits()) + " windows (doc_stride " +
                                                      std::to_string(b.docStride()) + ")"
                                                : std::string();
      std::fprintf(log, "epochs: %lld%s x %llu records%s packed in %llu rows, %llu a step: %lld steps\n",
                   (long long)epochs, o.epochs > 0 ? "" : " (the plan's)", (unsigned long long)shard.records(),
                   windows.c_str(), (unsigned long long)rows, (unsigned long long)perStep, (long long)run.steps);
    } else {
      run.steps = (int64_t)((epochs * shard.records() + perStep - 1) / perStep);
      std::fprintf(log, "epochs: %lld%s x %llu records, %llu a step: %lld steps\n", (long long)epochs,
                   o.epochs > 0 ? "" : " (the plan's)",
                   (unsigned long long)shard.records(), (unsigned long long)perStep, (long long)run.steps);
    }
  }
  if (!o.resumePath.empty()) {
    run.resume = std::make_unique<Checkpoint>(findResumeCheckpoint(o.resumePath, s, log));
    const CheckpointMeta &m = run.resume->meta;
    if (run.steps == 0) run.steps = m.totalSteps;
    if (o.seedGiven && o.seed != m.seed)
      fail("--seed %llu differs from the checkpoint's seed %llu (%s); drop --seed to resume",
           (unsigned long long)o.seed, (unsigned long long)m.seed, run.resume->path.c_str());
    run.seed = m.seed;
    // Micro-batches of a step over all data-parallel ranks (startMeta): D ranks with
    // accumulate K continue one process with accumulate D K, and the reverse.
    if (run.accumulate * run.ranks != m.accumulate)
      fail("accumulate is %lld now%s and %lld in the checkpoint %s: a resumed step must see the same micro-batches",
           (long long)(run.accumulate * run.ranks),
           run.ranks > 1 ? (" (" + std::to_string(run.accumulate) + " on each of " + std::to_string(run.ranks) +
                            " data-parallel ranks)").c_str()
                         : "",
           (long long)m.accumulate, run.resume->path.c_str());
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
                              run.steps, ps.cooldown_fraction(), ps.warmup_fraction());
  // A warmup fraction is of the schedule's steps: decay_steps, or the run's.
  if (ps.warmup_fraction() > 0)
    std::fprintf(log, "warmup: %lld steps (warmup_fraction %g of %lld)\n", (long long)run.schedule.warmupSteps,
                 ps.warmup_fraction(), (long long)run.schedule.decaySteps);
  if (run.resume)
    checkScheduleMatches(run.schedule, run.resume->meta.schedule, run.steps, run.resume->meta.totalSteps);
  run.lastStep = run.stopAt > 0 ? std::min(run.stopAt, run.steps) : run.steps;
}

/* Every path the run names, before any work (docs/runtime.md §9): outputs may not be
   inputs, must be writable, and an earlier run's checkpoints are not replaced
   without --overwrite (they are replaced at this run's first checkpoint). */
void checkRunPaths(RunSetup &run, const TrainOptions &o, FILE *log) {
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
  // --out replaces earlier weights (a safetensors file), as every run writes its
  // weights there; anything else needs --overwrite. --metrics has its own rule
  // (metrics.h: a resumed run continues it). --tensorboard's event files get
  // names no file has (tensorboard.h), so nothing there is ever replaced.
  std::vector<OutputSpec> outputs = {
      {"--out", run.outPath, false, IfExists::ReplaceEarlier, looksLikeSafetensors, "a safetensors file"}};
  if (!o.metricsPath.empty()) outputs.push_back({"--metrics", o.metricsPath, false, IfExists::OwnRule});
  if (!o.dumpDir.empty()) {
    OutputSpec dump{"--dump-dir", o.dumpDir, true};
    dump.names = isParityDumpFile;
    outputs.push_back(dump);
  }
  checkOutputs(outputs, inputs, o.overwrite, log);
  if (!run.checkpointDir.empty()) {
    checkOutputDirectory({"--checkpoint-dir", run.checkpointDir});
    if (samePath(run.checkpointDir, o.dataDir))
      fail("--checkpoint-dir '%s' is the data directory --data '%s': checkpoints go in a directory of their own",
           run.checkpointDir.c_str(), o.dataDir.c_str());
    // One run per directory, taken before anything in it is touched: a second run
    // (a requeued job while the first still runs) would remove the first one's
    // in-flight checkpoint as stale, or its checkpoints under --overwrite.
    run.lock = DirectoryLock::acquire(run.checkpointDir, "--checkpoint-dir");
    removeStaleCheckpointTemps(run.checkpointDir, log);
    if (!run.resume && !listCheckpoints(run.checkpointDir).empty()) {
      if (!o.overwrite)
        fail("--checkpoint-dir '%s' already holds checkpoints of an earlier run; continue it with --resume %s, "
             "or pass --overwrite to replace them", run.checkpointDir.c_str(), run.checkpointDir.c_str());
      run.clearOldCheckpoints = true;
    }
  }
}

}  // namespace

RunSetup planRun(Session &s, const TrainOptions &o, FILE *log) { return planRun(s, o, log, RankInfo{}); }

RunSetup planRun(Session &s, const TrainOptions &o, FILE *log, const RankInfo &ranks) {
  checkCounts(o);
  adamwConfig(s.plan());  // an optimizer lmrt does not implement fails before any work
  RunSetup run;
  run.rank = ranks.rank;
  run.ranks = ranks.ranks;
  run.evalOn = o.evalBatches > 0;  // validatePlan guarantees an "eval" program
  planSteps(run, s, o, log);
  run.outPath = o.outPath.empty() ? defaultWeightsPath(o.planPath) : o.outPath;
  // Sharded by default with several processes, as DeepSpeed and torchtitan write them;
  // whole by default under ZeRO on a tensor-parallel mesh, whose slices (flat runs of a
  // tensor-parallel block) the shard layout has no piece for yet: there a sharded one
  // first gathers each sliced tensor over the data group (checkpoint_shards.h).
  const bool zeroTensor = s.plan().train().mesh().zero() > 0 && s.plan().train().mesh().tensor() > 1;
  run.sharded = o.checkpointFormat.empty() ? comm::world().size() > 1 && !zeroTensor : o.checkpointFormat == "sharded";
  if (run.sharded) run.shardDir = run.checkpointDir;
  if (!ranks.writer()) {  // rank 0 writes the run's files
    // Under ZeRO and tensor parallelism rank 0's checkpoint gathers the other ranks' slices.
    run.joinsCheckpoints = !run.sharded && !run.checkpointDir.empty() &&
                           (s.plan().train().mesh().zero() > 0 || s.plan().train().mesh().tensor() > 1);
    run.joinsWeights = s.plan().train().mesh().tensor() > 1 || s.plan().train().mesh().zero() >= 3;
    run.checkpointDir.clear();
    run.outPath.clear();
    return run;
  }
  checkRunPaths(run, o, log);
  return run;
}

CheckpointMeta startMeta(const RunSetup &run, const DataFeed &data, const std::string &dataDir) {
  CheckpointMeta meta;
  meta.seed = run.seed;
  meta.totalSteps = run.steps;
  meta.accumulate = run.accumulate * run.ranks;  // micro-batches of a step over all data-parallel ranks
  meta.schedule = run.schedule;
  meta.trainTokens = data.train().size();
  meta.valTokens = data.val().size();
  meta.trainFingerprint = dataFingerprint(data.train());
  meta.valFingerprint = dataFingerprint(data.val());
  if (!run.resume) return meta;
  const CheckpointMeta &m = run.resume->meta;
  meta.nanSkips = m.nanSkips;
  meta.lossScaler = m.lossScaler;
  if (m.trainTokens != meta.trainTokens || m.valTokens != meta.valTokens ||
      m.trainFingerprint != meta.trainFingerprint || m.valFingerprint != meta.valFingerprint)
    fail("--data '%s' is not the data of checkpoint %s: train.bin has %llu tokens (fingerprint %016llx), the "
         "checkpoint's run had %llu (%016llx); val.bin %llu (%016llx) vs %llu (%016llx)",
         dataDir.c_str(), run.resume->path.c_str(), (unsigned long long)meta.trainTokens,
         (unsigned long long)meta.trainFingerprint, (unsigned long long)m.trainTokens,
         (unsigned long long)m.trainFingerprint, (unsigned long long)meta.valTokens,
         (unsigned long long)meta.valFingerprint, (unsigned long long)m.valTokens,
         (unsigned long long)m.valFingerprint);
  return meta;
}

DataWatch::Stamp DataWatch::Stamp::of(const std::string &path) {
  struct stat st;
  Stamp f;
  f.path = path;
  if (::stat(path.c_str(), &st) != 0) return f;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  f.size = st.st_size;
  f.mtime = st.st_mtim;
  return f;
}

bool DataWatch::Stamp::operator==(const Stamp &o) const {
  return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
         mtime.tv_nsec == o.mtime.tv_nsec;
}

DataWatch::DataWatch(const TokenSource &train, const TokenSource &val) {
  // llm.c splits span several files.
  for (const TokenSource *split : {&train, &val})
    for (const TokenFile &f : split->files()) stamps_.push_back(Stamp::of(f.path));
}

std::string DataWatch::changedFile() const {
  for (const Stamp &s : stamps_)
    if (!(Stamp::of(s.path) == s)) return s.path;
  return "";
}

}  // namespace lmrt

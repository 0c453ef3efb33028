/* Implements: `lmrt run X.plan --data DIR --steps N`: trains a plan on token
   shards, with checkpoints and exact resume (see runtime/train/train_loop.h and
   docs/runtime.md). */
#include <climits>
#include <csignal>
#include <cstdlib>
#include <memory>

#include "runtime/cuda/backend.h"
#include "base/paths.h"
#include "runtime/exec/session.h"
#include "runtime/train/threads.h"
#include "runtime/train/train_loop.h"
#include "tools/lmrt/commands.h"
#include "tools/lmrt/flags.h"

namespace lmrt {
namespace {

struct Options {
  TrainOptions train;
  std::string steps, seed, threads, evalInterval = "100", evalBatches = "10", checkpointEvery = "0", keep = "0",
                                    accumulate = "0", stopAt = "0", onNan = "stop";
  std::string device = "cpu";
  cuda::DeviceOptions cuda;
};

/* The CUDA backend's loop (runtime/cuda/train.cpp) has none of the CPU loop's
   checkpoints, accumulation or NaN handling yet: refuse those flags rather than
   ignore them, and apply the path rules of docs/runtime.md §9 here. */
void checkCudaRun(const TrainOptions &t) {
  const std::pair<const char *, bool> unsupported[] = {
      {"--checkpoint-dir", !t.checkpointDir.empty()}, {"--resume", !t.resumePath.empty()},
      {"--init", !t.initPath.empty()},                {"--accumulate", t.accumulate > 1},
      {"--stop-at", t.stopAt > 0},                    {"--on-nan skip", t.skipNonFinite}};
  for (const auto &[flag, given] : unsupported)
    if (given) fail("%s is not available with --device cuda yet (the CPU loop has it)", flag);
  std::string out = t.outPath.empty() ? defaultWeightsPath(t.planPath) : t.outPath;
  std::string dir = t.dataDir.empty() || t.dataDir.back() == '/' ? t.dataDir : t.dataDir + "/";
  refuseOverlappingPaths({{"--out", out}, {"--metrics", t.metricsPath}},
                         {{"the plan", t.planPath}, {"--data's train.bin", dir + "train.bin"},
                          {"--data's val.bin", dir + "val.bin"}});
  checkOutputFile({"--out", out});
  if (!t.metricsPath.empty()) checkOutputFile({"--metrics", t.metricsPath});
}

void run(Options &o) {
  TrainOptions &t = o.train;
  // Every flag is checked before the plan is loaded.
  if (!o.steps.empty()) t.steps = parseIntFlag("--steps", o.steps, 1, kMaxSteps);
  else if (t.resumePath.empty()) fail("--steps is required (it may be left out only with --resume)");
  if (!o.seed.empty()) t.seed = parseU64Flag("--seed", o.seed);
  t.seedGiven = !o.seed.empty();
  t.evalInterval = parseIntFlag("--eval-interval", o.evalInterval, 0, kMaxSteps);
  t.evalBatches = parseIntFlag("--eval-batches", o.evalBatches, 0, 1 << 30);
  t.checkpointEvery = parseIntFlag("--checkpoint-every", o.checkpointEvery, 0, kMaxSteps);
  t.keep = parseIntFlag("--keep", o.keep, 0, 1 << 30);
  t.accumulate = parseIntFlag("--accumulate", o.accumulate, 0, kMaxAccumulate);
  t.stopAt = parseIntFlag("--stop-at", o.stopAt, 0, kMaxSteps);
  t.skipNonFinite = o.onNan == "skip";
  if (o.threads.size()) setThreadCount((int)parseIntFlag("--threads", o.threads, 1, kMaxThreads));
  if (o.device == "cuda") {  // the CUDA backend's own loop (runtime/cuda/train.cpp)
    checkCudaRun(t);
    cuda::train(t, o.cuda);
    return;
  }
  std::unique_ptr<Session> session = Session::load(t.planPath);
  TrainResult r = train(*session, t);
  // Stopped by a signal with nothing saved: say so in the exit status, as the
  // signal itself would have.
  if (r.stopSignal && r.checkpoint.empty()) std::exit(128 + r.stopSignal);
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("run", "Train a plan on token shards");
  auto o = std::make_shared<Options>();
  TrainOptions &t = o->train;
  cmd->add_option("plan", t.planPath, "Plan written by `lmc compile`")->required();
  cmd->add_option("--data", t.dataDir, "Directory with train.bin and val.bin (`lmrt data build`)")
      ->required();
  cmd->add_option("--steps", o->steps, "Optimizer steps (with --resume: default the checkpoint's run's)");
  cmd->add_option("--seed", o->seed, "Seed of parameter init and batch order (64 bits)");
  cmd->add_option("--eval-interval", o->evalInterval, "Evaluate every N steps (0: only at the end)");
  cmd->add_option("--eval-batches", o->evalBatches, "Validation batches per evaluation (0: none)");
  cmd->add_option("--metrics", t.metricsPath, "Write one JSON line per step to this file");
  cmd->add_option("--out", t.outPath, "Final weights (default: the plan path with .safetensors)");
  cmd->add_option("--threads", o->threads, "OpenMP and OpenBLAS threads (1 to 1024)");
  cmd->add_option("--dump-dir", t.dumpDir,
                  "Write init and per-step tensors here for the PyTorch parity test");
  cmd->add_option("--tensorboard", t.tensorboardDir,
                  "Write TensorBoard event files (loss, lr, grad norm, tokens/s, GFLOP/s, val loss) here");
  cmd->add_flag("--profile", t.profile,
                "At the end, print the time per train_step kernel and per loop phase (steps 2..N)");
  cmd->add_option("--checkpoint-dir", t.checkpointDir,
                  "Write checkpoints (parameters, AdamW moments, step, RNG and data state) here");
  cmd->add_option("--checkpoint-every", o->checkpointEvery,
                  "Checkpoint every N steps (0: only at the end, at --stop-at and on SIGTERM/SIGINT)");
  cmd->add_option("--keep", o->keep, "Keep the newest K checkpoints (0: all)");
  cmd->add_option("--resume", t.resumePath,
                  "Continue from a checkpoint, or from the newest valid one in a --checkpoint-dir");
  cmd->add_option("--init", t.initPath, "Start from these weights (safetensors, plan names) instead of the init");
  cmd->add_option("--accumulate", o->accumulate,
                  "Micro-batches per optimizer step (gradient accumulation; default: the plan's train block)");
  cmd->add_option("--stop-at", o->stopAt,
                  "Stop after this step with a checkpoint, as SIGTERM would (the schedule still spans --steps)");
  cmd->add_option("--on-nan", o->onNan,
                  "On a non-finite loss or gradient: name the op that made it, then stop (default) or skip the step")
      ->check(CLI::IsMember({"stop", "skip"}));
  cmd->add_flag("--overwrite", t.overwrite,
                "Replace an earlier run's --metrics file and the checkpoints in --checkpoint-dir");
  cmd->add_option("--device", o->device, "Where the plan runs: cpu (the default) or cuda (docs/runtime.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--cuda-device", o->cuda.device, "--device cuda: the CUDA device index (default 0)");
  cmd->add_flag("--tf32", o->cuda.tf32, "--device cuda: run f32 GEMMs on TF32 tensor cores");
  cmd->callback([o] { run(*o); });
}

RegisterCommand reg("run", add);

}  // namespace
}  // namespace lmrt

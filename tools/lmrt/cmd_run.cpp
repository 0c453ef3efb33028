/* Implements: `lmrt run X.plan --data DIR --steps N`: trains a plan on token
   shards, with checkpoints and exact resume (see runtime/train/train_loop.h and
   docs/runtime.md). */
#include <climits>
#include <csignal>
#include <cstdlib>
#include <memory>

#include "runtime/exec/session.h"
#include "runtime/train/threads.h"
#include "runtime/train/train_loop.h"
#include "tools/lmrt/commands.h"
#include "tools/lmrt/device_flags.h"
#include "tools/lmrt/flags.h"

namespace lmrt {
namespace {

struct Options {
  TrainOptions train;
  std::string steps, epochs, seed, threads, evalInterval = "100", evalBatches = "10", checkpointEvery = "0", keep = "0",
                                    accumulate = "0", stopAt = "0", onNan = "stop";
  DeviceOptions device;
};

void run(Options &o) {
  TrainOptions &t = o.train;
  // Every flag is checked before the plan is loaded.
  if (!o.steps.empty() && !o.epochs.empty()) fail("--steps and --epochs both say how long to train; give one");
  if (!o.epochs.empty()) t.epochs = parseIntFlag("--epochs", o.epochs, 1, 1000000);
  else if (!o.steps.empty()) t.steps = parseIntFlag("--steps", o.steps, 1, kMaxSteps);
  // Neither: the checkpoint's run (--resume) or the plan's `epochs` (run_setup.cpp).
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
  std::unique_ptr<Session> session = Session::load(t.planPath, o.device);
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
  cmd->add_option("--epochs", o->epochs,
                  "Passes over an example dataset's records (lmrt data build --format jsonl), instead of --steps");
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
  cmd->add_option("--checkpoint-format", t.checkpointFormat,
                  "sharded: each process writes its own part of the state (the default with several processes); "
                  "whole: rank 0 gathers the state into one state.safetensors (the one-process default)")
      ->check(CLI::IsMember({"sharded", "whole"}));
  cmd->add_option("--resume", t.resumePath,
                  "Continue from a checkpoint, or from the newest valid one in a --checkpoint-dir");
  cmd->add_option("--init", t.initPath, "Start from these weights (safetensors, plan names) instead of the init");
  cmd->add_option("--init-map", t.initMap,
                  "Rename --init's tensors FROM=TO before loading, one '*' a side ('encoder.*=*'; 'mlm.*=' leaves "
                  "them out); repeatable, the first match applies");
  cmd->add_option("--init-strict", t.initStrict,
                  "false: load the parameters --init's file and the plan share, leave the rest at their "
                  "initializer, and say which (default true: every parameter, every tensor)");
  cmd->add_option("--accumulate", o->accumulate,
                  "Micro-batches per optimizer step (gradient accumulation; default: the plan's train block)");
  cmd->add_option("--stop-at", o->stopAt,
                  "Stop after this step with a checkpoint, as SIGTERM would (the schedule still spans --steps)");
  cmd->add_option("--on-nan", o->onNan,
                  "On a non-finite loss or gradient: name the op that made it, then stop (default) or skip the step")
      ->check(CLI::IsMember({"stop", "skip"}));
  cmd->add_flag("--overwrite", t.overwrite,
                "Replace an earlier run's --metrics file and the checkpoints in --checkpoint-dir, and an --out "
                "that is not a safetensors file (earlier weights are replaced without it)");
  addDeviceOptions(cmd, o->device);
  cmd->callback([o] { run(*o); });
}

RegisterCommand reg("run", add);

}  // namespace
}  // namespace lmrt

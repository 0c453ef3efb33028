/* Implements: `lmrt run X.plan --data DIR --steps N`: trains a plan on token
   shards (see runtime/train/train_loop.h and docs/runtime.md). */
#include <memory>

#include "runtime/cuda/backend.h"
#include "runtime/lmrt/session.h"
#include "runtime/train/threads.h"
#include "runtime/train/train_loop.h"
#include "tools/lmrt/commands.h"

namespace lmrt {
namespace {

struct Options {
  TrainOptions train;
  int threads = 0;
  bool setThreads = false;  // --threads given (otherwise OpenMP's default)
  std::string device = "cpu";
  cuda::DeviceOptions cuda;
};

void run(const Options &o) {
  if (o.setThreads) setThreadCount(o.threads);
  if (o.device == "cuda") {  // the CUDA backend's own loop (runtime/cuda/train.cpp)
    cuda::train(o.train, o.cuda);
    return;
  }
  std::unique_ptr<Session> session = Session::load(o.train.planPath);
  train(*session, o.train);
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("run", "Train a plan on token shards");
  auto o = std::make_shared<Options>();
  TrainOptions &t = o->train;
  cmd->add_option("plan", t.planPath, "Plan written by `lmc compile`")->required();
  cmd->add_option("--data", t.dataDir, "Directory with train.bin and val.bin (`lmrt data build`)")
      ->required();
  cmd->add_option("--steps", t.steps, "Optimizer steps")->required();
  cmd->add_option("--seed", t.seed, "Seed of parameter init and batch order");
  cmd->add_option("--eval-interval", t.evalInterval, "Evaluate every N steps (0: only at the end)");
  cmd->add_option("--eval-batches", t.evalBatches, "Validation batches per evaluation (0: none)");
  cmd->add_option("--metrics", t.metricsPath, "Write one JSON line per step to this file");
  cmd->add_option("--out", t.outPath, "Final weights (default: the plan path with .safetensors)");
  CLI::Option *threads = cmd->add_option("--threads", o->threads, "OpenMP and OpenBLAS threads");
  cmd->add_option("--dump-dir", t.dumpDir,
                  "Write init and per-step tensors here for the PyTorch parity test");
  cmd->add_option("--tensorboard", t.tensorboardDir,
                  "Write TensorBoard event files (loss, lr, grad norm, tokens/s, GFLOP/s, val loss) here");
  cmd->add_flag("--profile", t.profile,
                "At the end, print the time per train_step kernel and per loop phase (steps 2..N)");
  cmd->add_option("--device", o->device, "Where the plan runs: cpu (the default) or cuda (docs/runtime.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--cuda-device", o->cuda.device, "--device cuda: the CUDA device index (default 0)");
  cmd->add_flag("--tf32", o->cuda.tf32, "--device cuda: run f32 GEMMs on TF32 tensor cores");
  cmd->callback([o, threads] {
    o->setThreads = threads->count() > 0;
    run(*o);
  });
}

RegisterCommand reg("run", add);

}  // namespace
}  // namespace lmrt

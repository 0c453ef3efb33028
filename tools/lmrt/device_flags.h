/* Implements: the flags that choose where a plan runs, the same on every
   subcommand that runs one (run, eval, forward, sample): --device, --cuda-device
   and --tf32 (docs/runtime.md, "Backends"). */
#pragma once
#include <CLI/CLI.hpp>

#include "runtime/exec/backend.h"

namespace lmrt {

inline void addDeviceOptions(CLI::App *cmd, DeviceOptions &d) {
  cmd->add_option("--device", d.device, "Where the plan runs: cpu (the default) or cuda (docs/runtime.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--cuda-device", d.index,
                  "--device cuda: the CUDA device index (default: the rank's local rank under mpirun or srun, "
                  "modulo the machine's GPUs, so each rank of a machine takes its own; 0 in a process alone)")
      ->check(CLI::Range(0, 1023));
  cmd->add_flag("--tf32", d.tf32, "--device cuda: run f32 GEMMs on TF32 tensor cores");
}

}  // namespace lmrt

/* Implements: `lmrt devices`: the CUDA GPUs `lmrt run --device cuda` can use,
   one line each; with none (no CUDA backend in this build, no driver, no
   device) it says why and exits non-zero. The GPU tests use it to skip. */
#include <cstdio>

#include "runtime/exec/backend_registry.h"
#include "tools/lmrt/commands.h"

namespace lmrt {
namespace {

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("devices", "List the CUDA GPUs that --device cuda can use");
  cmd->callback([] {
    for (const std::string &line : backendProvider("cuda").listDevices()) std::printf("%s\n", line.c_str());
  });
}

RegisterCommand reg("devices", add);

}  // namespace
}  // namespace lmrt

/* Implements: `lmrt checkpoint consolidate CK --out W.safetensors`: the logical
   tensors of a checkpoint, whole or sharded (docs/runtime.md §8), in one
   safetensors file, the state.safetensors a whole checkpoint holds; with
   --params-only the parameters alone, a weights file for --init, --weights and
   `lmrt weights export`. Needs no plan: meta.json describes every tensor. */
#include <cstdio>
#include <memory>

#include "base/paths.h"
#include "runtime/train/checkpoint.h"
#include "tools/lmrt/commands.h"

namespace lmrt {
namespace {

struct Options {
  std::string checkpoint, out;
  bool paramsOnly = false, overwrite = false;
};

void consolidate(const Options &o) {
  checkOutputs({{"--out", o.out, false, IfExists::NeedsOverwrite}},
               {{"the checkpoint's metadata", o.checkpoint + "/meta.json"}}, o.overwrite, stdout);
  const size_t n = consolidateCheckpoint(o.checkpoint, o.out, o.paramsOnly);
  std::printf("wrote %s: %zu tensors of checkpoint %s%s\n", o.out.c_str(), n, o.checkpoint.c_str(),
              o.paramsOnly ? " (its parameters)" : " (parameters and optimizer state)");
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("checkpoint", "Work with training checkpoints");
  cmd->require_subcommand(1);
  auto o = std::make_shared<Options>();
  auto *c = cmd->add_subcommand("consolidate", "Write a checkpoint's logical tensors (whole or sharded) to one "
                                               "safetensors file");
  c->add_option("checkpoint", o->checkpoint, "A checkpoint directory (DIR/step-NNNNNNNN)")->required();
  c->add_option("--out,-o", o->out, "The safetensors file to write")->required();
  c->add_flag("--params-only", o->paramsOnly,
              "Only the parameters (a weights file for --init, --weights, lmrt weights export)");
  c->add_flag("--overwrite", o->overwrite, "Replace --out if it exists");
  c->callback([o] { consolidate(*o); });
}

RegisterCommand reg("checkpoint", add);

}  // namespace
}  // namespace lmrt

/* Implements: `lmrt forward X.plan --weights W --tokens T.safetensors --out
   logits.safetensors`: runs the plan's "forward" program once on given token
   ids and writes its logits. For comparisons with other implementations (the
   Hugging Face export tests compare these logits with transformers') and for
   scoring outside lmrt. The token file holds one i32 tensor named like the
   program's input ("tokens"), of exactly its shape. */
#include <cstdio>
#include <cstring>
#include <memory>

#include "runtime/lmrt/paths.h"
#include "runtime/lmrt/safetensors.h"
#include "runtime/lmrt/session.h"
#include "runtime/lmrt/weights.h"
#include "runtime/train/program_io.h"
#include "tools/lmrt/commands.h"

namespace lmrt {
namespace {

struct Options {
  std::string plan, weights, tokens, out;
  bool overwrite = false;
};

void forward(const Options &o) {
  refuseOverlappingPaths({{"--out", o.out}},
                         {{"the plan", o.plan}, {"--weights", o.weights}, {"--tokens", o.tokens}});
  FILE *exists = std::fopen(o.out.c_str(), "rb");
  if (exists) {
    std::fclose(exists);
    if (!o.overwrite) fail("--out '%s' exists; pass --overwrite to replace it", o.out.c_str());
  }
  checkOutputFile({"--out", o.out});
  std::unique_ptr<Session> session = Session::load(o.plan);
  if (!session->hasProgram("forward"))
    fail("plan '%s' has no forward program (its model function returns no logits)", o.plan.c_str());
  const plan::Input &in = tokenInput(findProgram(*session, "forward"));
  TensorType type = inputType(in);
  SafetensorsFile file = readSafetensors(o.tokens);
  auto it = file.tensors.find(in.name());
  if (it == file.tensors.end() || file.tensors.size() != 1)
    fail("--tokens '%s' must hold exactly one tensor, '%s' %s", o.tokens.c_str(), in.name().c_str(),
         type.str().c_str());
  if (it->second.type.dtype != DType::I32 || it->second.type.shape != type.shape)
    fail("--tokens '%s': '%s' is %s, the forward program reads %s", o.tokens.c_str(), in.name().c_str(),
         it->second.type.str().c_str(), type.str().c_str());
  std::vector<int32_t> ids(type.numel());
  std::memcpy(ids.data(), it->second.bytes.data(), it->second.bytes.size());
  const int64_t vocab = in.vocab() > 0 ? in.vocab() : session->plan().data().vocab();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || (vocab > 0 && ids[i] >= vocab))
      fail("--tokens '%s': id %d at flat index %zu is outside the vocabulary [0, %lld)", o.tokens.c_str(),
           ids[i], i, (long long)vocab);
  loadWeights(*session, o.weights);
  session->run("forward", {{in.name(), TensorRef{ids.data(), type}}});
  TensorRef logits = session->output("forward", "logits");
  writeSafetensors(o.out, {{"logits", logits}});
  std::printf("wrote %s: logits %s\n", o.out.c_str(), logits.type.str().c_str());
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("forward", "Run the forward program on given tokens and write the logits");
  auto o = std::make_shared<Options>();
  cmd->add_option("plan", o->plan, "Plan written by `lmc compile` (uses its \"forward\" program)")->required();
  cmd->add_option("--weights", o->weights, "Weights (safetensors with plan names)")->required();
  cmd->add_option("--tokens", o->tokens, "safetensors with one i32 tensor of the program's input shape")
      ->required();
  cmd->add_option("--out", o->out, "Where to write the logits (safetensors, tensor \"logits\")")->required();
  cmd->add_flag("--overwrite", o->overwrite, "Replace --out if it exists");
  cmd->callback([o] { forward(*o); });
}

RegisterCommand reg("forward", add);

}  // namespace
}  // namespace lmrt

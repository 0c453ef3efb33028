/* Implements: `lmrt forward X.plan --weights W (--tokens T | --inputs I)
   [--model NAME] --out OUT.safetensors`: runs one forward program of the plan
   once on given inputs and writes every output. For comparisons with other
   implementations (the Hugging Face tests compare these logits with
   transformers') and for scoring outside lmrt.
   - A plan with one model has the program "forward"; one with several has
     "forward:<model>" each, and --model picks one (docs/plan-format.md).
   - --inputs holds one tensor per program input, named like it ("ids",
     "segments", "attention_mask"), of exactly its dtype and shape; --tokens is
     the same for a program of one token input (written "tokens" or not).
   - The output file holds each output under its name: "logits" for a model
     returning one tensor, the returned names otherwise. */
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/paths.h"
#include "runtime/weights/safetensors.h"
#include "runtime/exec/session.h"
#include "runtime/weights/weights.h"
#include "contract/contract.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/distributed.h"
#include "runtime/train/program_io.h"
#include "tools/lmrt/commands.h"
#include "tools/lmrt/device_flags.h"

namespace lmrt {
namespace {

struct Options {
  std::string plan, weights, tokens, inputs, model, out;
  bool overwrite = false;
  DeviceOptions device;
};

/* The forward program --model names (or the plan's only one). */
std::string pickProgram(const Session &session, const Options &o) {
  std::vector<std::string> models;
  for (const plan::Program &p : session.plan().programs())
    if (p.name().rfind("forward:", 0) == 0) models.push_back(p.name().substr(8));
  std::string list;
  for (const std::string &m : models) list += (list.empty() ? "" : ", ") + m;
  if (session.hasProgram("forward")) {
    if (!o.model.empty() && o.model != session.plan().model())
      fail("--model '%s': plan '%s' has one model, '%s'", o.model.c_str(), o.plan.c_str(),
           session.plan().model().c_str());
    return "forward";
  }
  if (models.empty())
    fail("plan '%s' has no forward program (it defines no model; docs/language.md, `model`)", o.plan.c_str());
  if (o.model.empty())
    fail("plan '%s' has several models (%s): pick one with --model", o.plan.c_str(), list.c_str());
  for (const std::string &m : models)
    if (m == o.model) return "forward:" + m;
  fail("--model '%s': plan '%s' has no such model (it has %s)", o.model.c_str(), o.plan.c_str(), list.c_str());
}

/* Checks an input tensor against the program's input, ids against its bound. */
void checkInput(const char *flag, const std::string &file, const plan::Input &in, const SafetensorsTensor &t,
                int64_t bound) {
  TensorType want = inputType(in);
  if (t.type.dtype != want.dtype || t.type.shape != want.shape)
    fail("%s '%s': '%s' is %s, the forward program reads %s", flag, file.c_str(), in.name().c_str(),
         t.type.str().c_str(), want.str().c_str());
  if (want.dtype != DType::I32) return;
  std::vector<int32_t> ids(want.numel());
  std::memcpy(ids.data(), t.bytes.data(), t.bytes.size());
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || (bound > 0 && ids[i] >= bound))
      fail("%s '%s': '%s' holds id %d at flat index %zu, outside its range [0, %lld)", flag, file.c_str(),
           in.name().c_str(), ids[i], i, (long long)bound);
}

void forward(const Options &o) {
  const std::string &source = o.tokens.empty() ? o.inputs : o.tokens;
  const char *flag = o.tokens.empty() ? "--inputs" : "--tokens";
  if (o.tokens.empty() == o.inputs.empty()) fail("give exactly one of --tokens and --inputs");
  // The output rules (base/paths.h): any existing --out needs --overwrite.
  checkOutputs({{"--out", o.out, false, IfExists::NeedsOverwrite}},
               {{"the plan", o.plan}, {"--weights", o.weights}, {flag, source}}, o.overwrite, stdout);
  std::unique_ptr<Session> session = Session::load(o.plan, o.device);
  const std::string name = pickProgram(*session, o);
  // On a tensor-parallel or ZeRO-3 plan's ranks every rank runs the program, rank 0 writes.
  const RankInfo ranks = joinCommandRanks(*session, o.plan, "forward", name);
  const plan::Program &program = findProgram(*session, name);
  SafetensorsFile file = readSafetensors(source);
  std::map<std::string, TensorRef> feed;
  std::vector<std::vector<char>> copies;  // aligned copies of the file's bytes
  auto add = [&](const plan::Input &in, const SafetensorsTensor &t) {
    // An input without a bound of its own (older plans) takes the data's vocabulary.
    int64_t bound = in.vocab() > 0 ? in.vocab() : session->plan().data().vocab();
    checkInput(flag, source, in, t, bound);
    copies.emplace_back(t.bytes.begin(), t.bytes.end());
    feed[in.name()] = TensorRef{copies.back().data(), inputType(in)};
  };
  std::string want;
  for (const plan::Input &in : program.inputs())
    want += (want.empty() ? "" : ", ") + in.name() + " " + inputType(in).str();
  if (!o.tokens.empty()) {
    // The single-token-input form: one i32 tensor named like the input.
    if (program.inputs_size() != 1)
      fail("--tokens is for a program of one token input; program '%s' reads %s: give them with --inputs",
           name.c_str(), want.c_str());
    const plan::Input &in = tokenInput(program);
    auto it = file.tensors.find(in.name());
    if (it == file.tensors.end() || file.tensors.size() != 1)
      fail("--tokens '%s' must hold exactly one tensor, '%s' %s", source.c_str(), in.name().c_str(),
           inputType(in).str().c_str());
    add(in, it->second);
  } else {
    for (const plan::Input &in : program.inputs()) {
      auto it = file.tensors.find(in.name());
      if (it == file.tensors.end())
        fail("--inputs '%s' has no tensor '%s' (program '%s' reads %s)", source.c_str(), in.name().c_str(),
             name.c_str(), want.c_str());
      add(in, it->second);
    }
    for (const auto &[tensor, t] : file.tensors)
      if (!feed.count(tensor))
        fail("--inputs '%s' holds '%s', which program '%s' does not read (it reads %s)", source.c_str(),
             tensor.c_str(), name.c_str(), want.c_str());
  }
  loadWeightsOrCheckpoint(*session, o.weights);
  session->run(name, feed);
  std::vector<std::pair<std::string, TensorRef>> outputs;
  std::string summary;
  for (const plan::Output &out : program.outputs()) {
    outputs.push_back({out.name(), session->output(name, out.name())});
    summary += (summary.empty() ? "" : ", ") + out.name() + " " + outputs.back().second.type.str();
  }
  if (!ranks.writer()) return;
  writeSafetensors(o.out, outputs);
  std::printf("wrote %s: %s\n", o.out.c_str(), summary.c_str());
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("forward", "Run a forward program on given inputs and write its outputs");
  auto o = std::make_shared<Options>();
  cmd->add_option("plan", o->plan, "Plan written by `lmc compile` (uses a forward program)")->required();
  cmd->add_option("--weights", o->weights, "Weights (safetensors with plan names), or a checkpoint directory of `lmrt run` (step-N)")->required();
  auto *tokens =
      cmd->add_option("--tokens", o->tokens, "safetensors with one i32 tensor: the program's one token input");
  auto *inputs = cmd->add_option("--inputs", o->inputs,
                                 "safetensors with one tensor per program input, named like it (ids, segments, ...)");
  tokens->excludes(inputs);
  inputs->excludes(tokens);
  cmd->add_option("--model", o->model, "Which model's forward program, in a plan with several");
  cmd->add_option("--out", o->out, "Where to write the outputs (safetensors: \"logits\", or the model's names)")
      ->required();
  cmd->add_flag("--overwrite", o->overwrite, "Replace --out if it exists");
  addDeviceOptions(cmd, o->device);
  cmd->callback([o] { forward(*o); });
}

RegisterCommand reg("forward", add);

}  // namespace
}  // namespace lmrt

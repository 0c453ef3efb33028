/* Implements: `lmrt inspect X.plan`: reads and validates a plan and prints what
   it holds: parameters, inputs, programs (steps, arena, FLOPs), generated kernels
   and their compiled libraries, predicted peak memory and the training/data config. `--steps` also lists every step. */
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "contract/transform_spec.h"
#include "contract/plan_file.h"
#include "contract/plan_types.h"
#include "runtime/exec/validate.h"
#include "contract/contract.h"
#include "contract/plan_trust.h"
#include "contract/tensor_split.h"
#include "contract/train_settings.h"
#include "base/format.h"
#include "tools/lmrt/commands.h"

namespace lmrt {
namespace {

std::string human(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

std::string flops(double f) {
  const char *units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (f >= 1000 && u < 5) f /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %sFLOP", f, units[u]);
  return buf;
}

std::string initStr(const plan::Init &i) {
  char buf[96];
  switch (i.kind()) {
  case plan::Init::ZEROS: return "zeros";
  case plan::Init::ONES: return "ones";
  case plan::Init::NORMAL: std::snprintf(buf, sizeof buf, "normal(%g, %g)", i.mean(), i.std()); return buf;
  case plan::Init::UNIFORM: std::snprintf(buf, sizeof buf, "uniform(%g, %g)", i.low(), i.high()); return buf;
  case plan::Init::ORTHOGONAL:
    if (i.orthogonal_blocks() > 1)
      std::snprintf(buf, sizeof buf, "orthogonal(%g, blocks = %lld)", i.gain(), (long long)i.orthogonal_blocks());
    else
      std::snprintf(buf, sizeof buf, "orthogonal(%g)", i.gain());
    return buf;
  case plan::Init::BLOCKS: {
    std::string s = "blocks(";
    for (int k = 0; k < i.blocks_size(); ++k) {
      std::snprintf(buf, sizeof buf, "%s%g", k ? ", " : "", i.blocks(k));
      s += buf;
    }
    return s + ")";
  }
  default: return "?";
  }
}

std::string inputStr(const plan::Input &in) {
  std::string s = in.name() + " " + planTypeStr(in.type());
  if (in.vocab()) s += " (vocab " + std::to_string(in.vocab()) + ")";
  if (in.has_ignore_index()) s += " (ignore index " + std::to_string(in.ignore_index()) + ")";
  return s;
}

void printSteps(const plan::Program &prog) {
  for (int s = 0; s < prog.steps_size(); ++s) {
    const plan::Step &st = prog.steps(s);
    std::string line = "    " + std::to_string(s) + ": " + st.op() + " (";
    for (int k = 0; k < st.inputs_size(); ++k) line += (k ? ", " : "") + std::to_string(st.inputs(k));
    line += ") -> (";
    for (int k = 0; k < st.outputs_size(); ++k) {
      int id = st.outputs(k);
      line += (k ? ", " : "") + std::to_string(id) + ": " + planTypeStr(prog.buffers(id).type());
    }
    line += ")";
    if (!st.loc().empty()) line += "  @ " + st.loc();
    std::printf("%s\n", line.c_str());
  }
}

/* "  dtypes: f32 1.2 MiB (40 buffers), bf16 300 KiB (12 buffers)": the program's
   arena buffers (views left out: they share their buffer's bytes) by dtype, in
   the dtype enum's order. Printed only for a program with a reduced-precision
   buffer, so an fp32 plan's report reads as it always did. */
void printDTypes(const plan::Program &prog) {
  std::map<int, std::pair<int64_t, int>> byDType;  // dtype -> (bytes, buffers)
  bool reduced = false;
  for (const plan::Buffer &b : prog.buffers()) {
    reduced |= b.type().dtype() == plan::BF16 || b.type().dtype() == plan::F16;
    if (b.kind() != plan::Buffer::ARENA || b.has_view_of()) continue;
    auto &[bytes, count] = byDType[(int)b.type().dtype()];
    bytes += b.size_bytes(), ++count;
  }
  if (!reduced) return;
  std::string line;
  for (const auto &[dtype, v] : byDType)
    line += (line.empty() ? "" : ", ") + std::string(planDTypeName((plan::DType)dtype)) + " " + human((double)v.first) +
            " (" + std::to_string(v.second) + " buffers)";
  std::printf("    arena by dtype: %s\n", line.c_str());
}

/* "    gathers: 24 all_gathers, 106.2 KiB per run (f32 42.2 KiB in 15, bf16 64.0 KiB
   in 9)": the bytes of the tensors a program's all_gather steps put together (each
   rank's part and the others'), by dtype in the dtype enum's order. Under ZeRO stage 3
   the parameters' gathers; with --precision bf16 those a GEMM reads move bf16
   (docs/distributed.md, "ZeRO with mixed precision"). Printed only for a program that
   gathers. */
void printGathers(const plan::Program &prog) {
  std::map<int, std::pair<int64_t, int>> byDType;  // dtype -> (bytes, gathers)
  int64_t total = 0;
  int count = 0;
  for (const plan::Step &st : prog.steps()) {
    if (st.op() != "all_gather" || st.outputs_size() != 1) continue;
    const plan::TensorType &t = prog.buffers(st.outputs(0)).type();
    const int64_t bytes = toTensorType(t).bytes();
    auto &[b, n] = byDType[(int)t.dtype()];
    b += bytes, ++n, total += bytes, ++count;
  }
  if (count == 0) return;
  std::string line;
  for (const auto &[dtype, v] : byDType)
    line += (line.empty() ? "" : ", ") + std::string(planDTypeName((plan::DType)dtype)) + " " + human((double)v.first) +
            " in " + std::to_string(v.second);
  std::printf("    gathers: %d all_gather%s, %s per run (%s)\n", count, count == 1 ? "" : "s", human((double)total).c_str(),
              line.c_str());
}

std::string attrStr(const plan::Attr &a) {
  char buf[64];
  switch (a.value_case()) {
  case plan::Attr::kI: return std::to_string(a.i());
  case plan::Attr::kF: std::snprintf(buf, sizeof buf, "%g", a.f()); return buf;
  case plan::Attr::kB: return a.b() ? "true" : "false";
  case plan::Attr::kS: return "\"" + a.s() + "\"";
  default: return "?";
  }
}

/* The `export` section's map: `lmrt weights export --format <format>` writes this. */
void printWeightExport(const plan::WeightExport &w) {
  int transposed = 0, tied = 0;
  for (const plan::WeightMapEntry &e : w.entries()) transposed += e.transpose(), tied += e.tied_size();
  std::printf("export %s \"%s\" (%s): %d parameters, %d transposed, %d tied names\n", w.format().c_str(),
              w.architecture().c_str(), w.source_loc().c_str(), w.entries_size(), transposed, tied);
  std::map<std::string, plan::Attr> config(w.config().begin(), w.config().end());
  std::string line;
  for (const auto &[k, v] : config) line += (line.empty() ? "" : ", ") + k + " = " + attrStr(v);
  std::printf("  config: %s\n", line.c_str());
  for (const plan::WeightMapEntry &e : w.entries()) {
    std::string names;
    for (const std::string &n : e.names()) names += (names.empty() ? "" : ", ") + n;
    std::string extra = e.transpose() ? " (transposed)" : "";
    for (const std::string &n : e.tied()) extra += " (tied " + n + ")";
    std::printf("  %s -> %s%s\n", e.param().c_str(), names.c_str(), extra.c_str());
  }
  for (const std::string &o : w.omitted()) std::printf("  %s omitted (the model class lacks it)\n", o.c_str());
}

void inspect(const std::string &path, bool steps) {
  plan::Plan p = readPlanFile(path);
  validatePlan(p, path);
  std::printf("plan %s: model '%s', objective '%s', from %s (compiled by %s)\n", path.c_str(),
              p.model().c_str(), p.objective().c_str(), p.source().c_str(),
              p.compiler_version().empty() ? "unknown" : p.compiler_version().c_str());
  if (!p.config().empty()) {
    std::map<std::string, double> cfg(p.config().begin(), p.config().end());
    std::string line;
    for (const auto &[k, v] : cfg) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", v);
      line += (line.empty() ? "" : ", ") + k + " = " + buf;
    }
    std::printf("config: %s\n", line.c_str());
  }

  // What lmrt will hold (contract.h's breakdown, the sum lmc wrote into the plan).
  const PredictedMemory mem = predictedMemory(p);
  std::printf("params: %d tensors, %lld elements (%s)\n", p.params_size(), (long long)p.param_count(),
              human((double)mem.params).c_str());
  size_t width = 0;
  for (const plan::Param &q : p.params()) width = std::max(width, q.name().size());
  for (const plan::Param &q : p.params()) {
    // What the parameter groups set beyond decay (docs/language.md, "Parameter groups").
    std::string extra;
    char buf[48];
    if (q.has_lr_scale() && !q.frozen()) {
      std::snprintf(buf, sizeof buf, " lr x %g", q.lr_scale());
      extra += buf;
    }
    if (q.has_trust_ratio() && !q.frozen()) extra += q.trust_ratio() ? " trust_ratio" : " no trust_ratio";
    if (q.has_sharding()) {  // a tensor-parallel rank's slice (docs/distributed.md, "Tensor parallelism")
      const plan::ParamSharding &sh = q.sharding();
      std::vector<int64_t> whole(q.type().shape().begin(), q.type().shape().end());
      if (sh.dim() >= 0 && sh.dim() < (int64_t)whole.size())
        whole[(size_t)sh.dim()] = splitLogicalSize(sh, whole[(size_t)sh.dim()]);
      std::string shape;
      for (size_t i = 0; i < whole.size(); ++i) shape += (i ? ", " : "") + std::to_string(whole[i]);
      extra += " split: dim " + std::to_string(sh.dim()) + " of [" + shape + "] over " +
               std::to_string(sh.shards()) + " tensor ranks" +
               (sh.segments() > 1 ? " (" + std::to_string(sh.segments()) + " segments, each split)" : "") +
               (sh.logical_size() > 0 ? " (blocks of " + std::to_string(q.type().shape((int)sh.dim())) +
                                            ", the last rank's padded by " +
                                            std::to_string(q.type().shape((int)sh.dim()) * sh.shards() -
                                                           sh.logical_size()) + ")"
                                      : "");
    }
    std::printf("  %-*s  %-18s %-24s %s%s\n", (int)width, q.name().c_str(), planTypeStr(q.type()).c_str(),
                initStr(q.init()).c_str(), q.frozen() ? "frozen" : q.weight_decay() ? "decay" : "", extra.c_str());
  }

  if (p.inputs_size()) {
    std::printf("inputs:\n");
    for (const plan::Input &in : p.inputs()) std::printf("  %s\n", inputStr(in).c_str());
  }
  std::printf("programs:\n");
  int nameWidth = 10;  // "forward:electra_discriminator" is longer than "train_step"
  for (const plan::Program &prog : p.programs()) nameWidth = std::max(nameWidth, (int)prog.name().size());
  for (const plan::Program &prog : p.programs()) {
    std::string ins;
    for (const plan::Input &in : prog.inputs()) ins += (ins.empty() ? "" : ", ") + inputStr(in);
    std::string metrics;
    for (const plan::Output &out : prog.outputs())
      if (out.name().rfind("metric:", 0) == 0) metrics += (metrics.empty() ? "; reports " : ", ") + out.name().substr(7);
    // A forward program's outputs: "logits", or the names the model returns.
    if (contract::isForwardProgram(prog.name()))
      for (const plan::Output &out : prog.outputs())
        metrics += (metrics.empty() ? "; outputs " : ", ") + out.name() + " " +
                   toTensorType(prog.buffers(out.buffer()).type()).str();
    std::printf("  %-*s %5d steps, %5d buffers, arena %s, %s; reads %s%s\n", nameWidth, prog.name().c_str(),
                prog.steps_size(), prog.buffers_size(), human((double)prog.arena_bytes()).c_str(),
                flops((double)prog.flops()).c_str(), ins.c_str(), metrics.c_str());
    printDTypes(prog);
    printGathers(prog);
    if (steps) printSteps(prog);
  }
  if (p.states_size() > 0) {
    // The key/value caches of the prefill and decode programs (lmrt sample).
    int64_t bytes = 0;
    for (const plan::State &st : p.states()) bytes += toTensorType(st.type()).bytes();
    bool encode = false;  // an encoder-decoder plan: the encoder's states too
    for (const plan::Program &prog : p.programs()) encode |= prog.name() == "encode";
    std::printf("states: %d (the %s programs' caches, %s)\n", p.states_size(),
                encode ? "prefill, decode and encode" : "prefill and decode", human((double)bytes).c_str());
    for (const plan::State &st : p.states())
      std::printf("  %-28s %s\n", st.name().c_str(), toTensorType(st.type()).str().c_str());
  }
  if (p.kernels_size() > 0) {
    std::printf("generated kernels: %d (docs/fusion.md)\n", p.kernels_size());
    const char *schedules[] = {"elementwise", "column_reduce", "matmul_epilogue"};
    for (const plan::Kernel &k : p.kernels()) {
      int sched = (int)k.schedule();
      std::printf("  %-28s %-15s [%lld, %lld], %d inputs, %d outputs\n", k.name().c_str(),
                  sched >= 0 && sched < 3 ? schedules[sched] : "?", (long long)k.rows(), (long long)k.cols(),
                  k.num_inputs(), k.args_size() - k.num_inputs());
    }
    for (const plan::KernelLibrary &l : p.kernel_libraries())
      std::printf("  library %-10s %s, %s, compiled by %s\n", l.target().c_str(),
                  human((double)l.image().size()).c_str(), sha256Hex(l.image()).c_str(), l.compiler().c_str());
  }
  // A plan is native code: who vouches for it (docs/plan-format.md, "Trust").
  std::printf("signature: %s\n", signerOf(p).c_str());
  std::printf("memory: predicted peak %s (plan); params %s + grads %s + AdamW state %s + arena %s + "
              "inputs %s + matmul scratch %s%s%s = %s\n",
              human((double)p.predicted_peak_bytes()).c_str(), human((double)mem.params).c_str(),
              human((double)mem.grads).c_str(), human((double)mem.optimizer).c_str(), human((double)mem.arena).c_str(),
              human((double)mem.inputs).c_str(), human((double)mem.matmulScratch).c_str(),
              mem.lossScratch ? (" + linear cross-entropy chunk " + human((double)mem.lossScratch)).c_str() : "",
              mem.commScratch ? (" + communication " + human((double)mem.commScratch)).c_str() : "",
              human((double)mem.total()).c_str());
  if (!p.precision().empty())
    std::printf("precision: %s (GEMM operands in %s, fp32 accumulation, master weights and optimizer state; "
                "docs/mixed-precision.md)\n",
                p.precision().c_str(), p.precision().c_str());
  if (p.train().has_loss_scale()) {
    const plan::LossScale &ls = p.train().loss_scale();
    std::printf("loss scale: dynamic, from %g; halved after %lld overflow%s in a row (the steps skipped), doubled "
                "after %lld clean steps; an overflow at %g stops the run\n",
                ls.initial_scale(), (long long)ls.hysteresis(), ls.hysteresis() == 1 ? "" : "s",
                (long long)ls.growth_interval(), ls.min_scale());
  }
  if (!p.remat().empty())
    std::printf("remat: %s (the train step recomputes in the backward; docs/remat.md)\n", p.remat().c_str());
  std::printf("flops per train step: %s\n", flops((double)p.flops_per_step()).c_str());
  const plan::Optimizer &o = p.train().optimizer();
  const plan::Schedule &s = p.train().schedule();
  // AdamW's line as it always was; another optimizer's settings from the table.
  std::string optimizer = o.kind() + " lr " + formatG(o.lr()) + " betas (" + formatG(o.beta1()) + ", " + formatG(o.beta2()) +
                          ") eps " + formatG(o.eps()) + " weight_decay " + formatG(o.weight_decay());
  // Adafactor's relative step computes its own rate and ignores lr and the
  // schedule (runtime/exec/optimizer.cpp, HF's Adafactor._get_lr): print the
  // rate it uses, not the lr it does not read.
  const bool relativeStep = o.kind() == "adafactor" && o.relative_step();
  if (const settings::Kind *k = settings::findOptimizer(o.kind()); k && o.kind() != settings::kDefaultOptimizer) {
    optimizer = o.kind();
    for (const settings::Setting *t : k->takes) {
      if (relativeStep && t == &settings::kLr) {
        optimizer += std::string(" lr ") + (o.warmup_init() ? "min(1e-6 step, 1/sqrt(step))" : "min(1e-2, 1/sqrt(step))") +
                     (o.scale_parameter() ? " x max(eps2, rms(param))" : "") + " (relative step; lr not read)";
        continue;
      }
      optimizer += std::string(" ") + t->attr + " " + settings::format(*t, contract::trainSettingValue(p.train(), *t));
    }
  }
  std::printf("train: %s; schedule %s warmup %lld "
              "min_lr %g decay_steps %lld%s%s; clip_grad_norm %g%s\n",
              optimizer.c_str(), s.kind().c_str(), (long long)s.warmup_steps(), s.min_lr(),
              (long long)s.decay_steps(), s.decay_steps() ? "" : " (the run's --steps)",
              relativeStep ? " (not read: relative step)" : "", p.train().clip_grad_norm(),
              p.train().clip_grad_norm() ? "" : " (off)");
  if (p.train().clip_grad_value() > 0)
    std::printf("clip_grad_value: %g (each gradient element clamped to [-%g, %g])\n", p.train().clip_grad_value(),
                p.train().clip_grad_value(), p.train().clip_grad_value());
  for (const plan::ParamGroup &g : p.train().param_groups()) {
    std::string line;
    for (const std::string &pattern : g.patterns()) line += (line.empty() ? "\"" : ", \"") + pattern + "\"";
    if (g.has_weight_decay()) line += std::string(" weight_decay = ") + (g.weight_decay() ? "true" : "false");
    if (g.has_lr_scale()) line += " lr_scale = " + formatG(g.lr_scale());
    if (g.frozen()) line += " frozen = true";
    if (g.has_trust_ratio()) line += std::string(" trust_ratio = ") + (g.trust_ratio() ? "true" : "false");
    std::printf("group: %s (%s)\n", line.c_str(), g.source().c_str());
  }
  const settings::Kind *schedule = settings::findSchedule(s.kind());
  if (schedule && settings::takes(*schedule, settings::kCooldown))
    std::printf("wsd cooldown: the last %g of the steps after warmup\n", s.cooldown_fraction());
  if (p.train().epochs() > 0)
    std::printf("epochs: %lld (lmrt run's length without --steps or --epochs)\n", (long long)p.train().epochs());
  if (s.warmup_fraction() > 0)
    std::printf("warmup_fraction: %g (warmup over ceil(%g x the schedule's steps) steps)\n", s.warmup_fraction(),
                s.warmup_fraction());
  if (p.train().accumulate() > 1)
    std::printf("accumulate: %lld micro-batches per step\n", (long long)p.train().accumulate());
  if (p.train().has_mesh())
    std::printf("mesh: data %lld, tensor %lld%s%s (global batch %lld; run with mpirun -np %lld)\n",
                (long long)p.train().mesh().data(), (long long)p.train().mesh().tensor(),
                p.train().mesh().sequence_parallel() ? ", sequence parallel" : "",
                p.train().mesh().zero() > 0 ? (", ZeRO stage " + std::to_string(p.train().mesh().zero())).c_str() : "",
                // A mesh without a data axis records no global batch: it is the rank's batch.
                (long long)(p.train().mesh().global_batch() > 0 ? p.train().mesh().global_batch() : p.data().batch()),
                (long long)(p.train().mesh().data() * p.train().mesh().tensor()));
  std::printf("data: %s, batch %lld, seq %lld, vocab %lld", p.data().transform().c_str(),
              (long long)p.data().batch(), (long long)p.data().seq(), (long long)p.data().vocab());
  // The transform's parameters, in name order (a protobuf map has none of its own).
  std::map<std::string, double> params(p.data().params().begin(), p.data().params().end());
  const lmrt::data::TransformSpec *spec = lmrt::data::findTransform(p.data().transform());
  for (const auto &[name, value] : params) {
    const lmrt::data::TransformParam *choice = nullptr;
    if (spec)
      for (const lmrt::data::TransformParam &q : spec->params)
        if (q.choices && name == q.name) choice = &q;
    size_t index = (size_t)value;
    if (choice && index < lmrt::data::choiceNames(*choice).size())  // by name
      std::printf(", %s %s", name.c_str(), lmrt::data::choiceNames(*choice)[index].c_str());
    else
      std::printf(", %s %g", name.c_str(), value);
  }
  std::printf("\n");
  for (const plan::WeightExport &w : p.weight_exports()) printWeightExport(w);
  std::printf("plan ok\n");
}

void add(CLI::App &app) {
  auto *cmd = app.add_subcommand("inspect", "Validate a plan and print its contents");
  auto path = std::make_shared<std::string>();
  auto steps = std::make_shared<bool>(false);
  cmd->add_option("plan", *path, "Plan file written by `lmc compile`")->required();
  cmd->add_flag("--steps", *steps, "Also list every step of every program");
  cmd->callback([path, steps] { inspect(*path, *steps); });
}

RegisterCommand reg("inspect", add);

}  // namespace
}  // namespace lmrt

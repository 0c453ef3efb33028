/* Implements: the plan contract (see contract.h): plan types, the bounds of the
   train and data configs and of parameter initialisers, and the whole-plan check
   (declarations, buffers, steps against the generated op table, dataflow,
   outputs and program conventions). */
#include "contract/contract.h"
#include "contract/tensor_split.h"
#include "contract/zero3.h"

#include "base/format.h"
#include <algorithm>
#include <climits>
#include <limits>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "contract/train_settings.h"
#include "contract/transform_spec.h"
#include "contract/linear_cross_entropy.h"
#include "contract/matmul_dims.h"
#include "contract/shape_rules.h"
#include "base/hash.h"
#include "base/tensor.h"
#include "contract/op_table.h"

namespace lmrt {

// --- plan tensor types ---------------------------------------------------------

int64_t dtypeBytes(plan::DType dtype) {
  return dtype == plan::F64 ? 8 : dtype == plan::BF16 || dtype == plan::F16 ? 2 : 4;
}

const char *planDTypeName(plan::DType dtype) {
  switch (dtype) {
  case plan::F32: return "f32";
  case plan::F64: return "f64";
  case plan::I32: return "i32";
  case plan::BF16: return "bf16";
  case plan::F16: return "f16";
  default: return "invalid";
  }
}

int64_t numElements(const plan::TensorType &t) {
  int64_t n = 1;
  for (int64_t d : t.shape()) n *= d;
  return n;
}

int64_t typeBytes(const plan::TensorType &t) { return numElements(t) * dtypeBytes(t.dtype()); }

namespace {
/* A step's integer attribute (-1 when absent) and boolean one (false when absent). */
int64_t stepAttrInt(const plan::Step &s, const char *name) {
  auto it = s.attrs().find(name);
  return it == s.attrs().end() ? int64_t(-1) : int64_t(it->second.i());
}
bool stepAttrBool(const plan::Step &s, const char *name) {
  auto it = s.attrs().find(name);
  return it != s.attrs().end() && it->second.b();
}
}  // namespace

bool joinsAllReduceBucket(const plan::Program &program, const plan::Step &first, const plan::Step &next) {
  auto oneToOne = [](const plan::Step &s) {
    return s.op() == "all_reduce" && s.inputs_size() == 1 && s.outputs_size() == 1;
  };
  if (!oneToOne(first) || !oneToOne(next) ||
      program.buffers(first.inputs(0)).type().dtype() != program.buffers(next.inputs(0)).type().dtype())
    return false;
  return stepAttrInt(first, "mesh_axis") == stepAttrInt(next, "mesh_axis") &&
         stepAttrInt(first, "group_size") == stepAttrInt(next, "group_size") &&
         stepAttrBool(first, "mean") == stepAttrBool(next, "mean");
}

bool joinsReduceScatterBucket(const plan::Program &program, const plan::Step &first, const plan::Step &next) {
  auto flat = [](const plan::Step &s) {
    return s.op() == "reduce_scatter" && s.inputs_size() == 1 && s.outputs_size() == 1 && stepAttrInt(s, "dim") == 0;
  };
  if (!flat(first) || !flat(next) ||
      program.buffers(first.inputs(0)).type().dtype() != program.buffers(next.inputs(0)).type().dtype())
    return false;
  return stepAttrInt(first, "mesh_axis") == stepAttrInt(next, "mesh_axis") &&
         stepAttrInt(first, "group_size") == stepAttrInt(next, "group_size");
}

std::vector<int> paramCopies(const plan::Program &program) {
  // The train step only: the one program a run repeats with the optimizer in between.
  if (program.name() != "train_step") return {};
  // A ZeRO-3 slice cast for a gather (-lm-mixed-precision) is that gather's temporary.
  std::vector<bool> gathered((size_t)program.buffers_size(), false);
  for (const plan::Step &step : program.steps())
    if (step.op() == "all_gather")
      for (int id : step.inputs())
        if (id >= 0 && id < program.buffers_size()) gathered[(size_t)id] = true;
  std::vector<int> out;
  for (int si = 0; si < program.steps_size(); ++si) {
    const plan::Step &step = program.steps(si);
    if (step.op() != "cast" || step.inputs_size() != 1 || step.outputs_size() != 1) continue;
    const int in = step.inputs(0), to = step.outputs(0);
    if (in < 0 || in >= program.buffers_size() || to < 0 || to >= program.buffers_size()) continue;
    const plan::Buffer &a = program.buffers(in), &b = program.buffers(to);
    if (a.kind() == plan::Buffer::PARAM && b.kind() == plan::Buffer::ARENA && !b.has_view_of() &&
        (b.type().dtype() == plan::BF16 || b.type().dtype() == plan::F16) && !gathered[(size_t)to])
      out.push_back(si);
  }
  return out;
}

std::vector<int> keptParamCopies(const plan::Program &program) {
  // The arena's storage buffers (views share their base's bytes) by offset: a buffer
  // meets another if one that starts before it ends after its start, or the next one
  // starts before its end.
  struct Span {
    int64_t begin, end;
    int id;
  };
  std::vector<Span> spans;
  for (int id = 0; id < program.buffers_size(); ++id) {
    const plan::Buffer &b = program.buffers(id);
    if (b.kind() == plan::Buffer::ARENA && !b.has_view_of() && b.size_bytes() > 0)
      spans.push_back({b.offset(), b.offset() + b.size_bytes(), id});
  }
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.id < b.id;
  });
  std::vector<bool> alone((size_t)program.buffers_size(), false);
  int64_t reach = std::numeric_limits<int64_t>::min();  // the furthest end of the spans so far
  for (size_t k = 0; k < spans.size(); ++k) {
    const bool before = reach > spans[k].begin;
    const bool after = k + 1 < spans.size() && spans[k + 1].begin < spans[k].end;
    alone[(size_t)spans[k].id] = !before && !after;
    reach = std::max(reach, spans[k].end);
  }
  std::vector<int> out;
  for (int si : paramCopies(program))
    if (alone[(size_t)program.steps(si).outputs(0)]) out.push_back(si);
  return out;
}

namespace {

int64_t matmulScratch(const plan::Program &program, const plan::Step &step) {
  if (step.op() != "matmul" || step.inputs_size() != 2) return 0;
  auto flag = [&](const char *name) {
    auto it = step.attrs().find(name);
    return it != step.attrs().end() && it->second.b();
  };
  const plan::TensorType &lhs = program.buffers(step.inputs(0)).type(), &rhs = program.buffers(step.inputs(1)).type();
  if (lhs.shape_size() < 2 || rhs.shape_size() < 2) return 0;
  const bool ta = flag("transpose_lhs"), tb = flag("transpose_rhs");
  const kernels::MatmulDims d = kernels::matmulDims(lhs.shape(), rhs.shape(), ta, tb);
  // The scratch holds the product: f32 for bf16 or f16 operands.
  const plan::DType out = lhs.dtype() == plan::BF16 || lhs.dtype() == plan::F16 ? plan::F32 : lhs.dtype();
  return kernels::matmulScratchBytes(ta, tb, d.batch, d.m, d.n, d.k, dtypeBytes(out));
}

/* The [chunk, V] scratch of a linear_cross_entropy(_with_grad|_stats|_stats_grad) step, else 0; `cuda`: the
   CUDA kernel's (its chunk: linearCrossEntropyCudaChunkRows), which is at least the CPU's. */
int64_t lossScratch(const plan::Program &program, const plan::Step &step, bool cuda) {
  // The vocabulary-parallel loss's two ops keep one [chunk, V/T] scratch of h's type (no
  // row losses); on CUDA the chunk is the GPU's, as the fused loss's (vocab_parallel.cu).
  const bool stats = step.op() == "linear_cross_entropy_stats" || step.op() == "linear_cross_entropy_stats_grad";
  if ((step.op() != "linear_cross_entropy" && step.op() != "linear_cross_entropy_with_grad" && !stats) ||
      step.inputs_size() < 3)
    return 0;
  auto attr = [&](const char *name) -> const plan::Attr * {
    auto it = step.attrs().find(name);
    return it == step.attrs().end() ? nullptr : &it->second;
  };
  const plan::TensorType &h = program.buffers(step.inputs(0)).type(), &w = program.buffers(step.inputs(1)).type();
  const plan::TensorType &targets = program.buffers(step.inputs(2)).type();
  if (w.shape_size() != 2) return 0;
  const bool tb = attr("transpose_rhs") && attr("transpose_rhs")->b();
  const int64_t rows = numElements(targets), v = w.shape(tb ? 0 : 1), d = w.shape(tb ? 1 : 0);
  const int64_t planned = attr("chunk_rows") ? attr("chunk_rows")->i() : 0;
  const int64_t chunk = cuda ? kernels::linearCrossEntropyCudaChunkRows(planned, rows, v, d) : planned;
  if (stats) return kernels::linearCrossEntropyEffectiveChunk(chunk, rows) * v * dtypeBytes(h.dtype());
  // bf16 or f16 operands: f32 logits, and in a train step their gradient's rounded copy.
  const bool reduced = h.dtype() == plan::BF16 || h.dtype() == plan::F16;
  const int64_t logitBytes = reduced ? 4 : dtypeBytes(h.dtype());
  const int64_t copyBytes = reduced && step.op() == "linear_cross_entropy_with_grad" ? dtypeBytes(h.dtype()) : 0;
  const int64_t width = cuda ? v : kernels::linearCrossEntropyRowStride(v);
  return kernels::linearCrossEntropyScratchBytes(chunk, rows, width, logitBytes, copyBytes);
}

/* The bytes lmrt's collectives hold beside the arena on a mesh. Kept between
   calls (so the largest of each counts once): the MPI communicator's receive
   parts and its chunk of sums (runtime/comm/mpi_communicator.cpp: an all-reduce
   receives D chunks of ceil(n/D) and sums one; a reduce-scatter receives D
   slices; an all-gather copies its input when it lies in the output) and ZeRO's
   staging slice (runtime/cpu/zero_shards.cpp). Alive for one call: the collective
   kernels' contiguous copies (runtime/cpu/kernels/collective.cpp; none along a
   leading dimension, as ZeRO-3's flat gathers and reduce-scatters are) and ZeRO-2's
   padded gradient. A bucket (a run of adjacent all_reduce steps of one group and
   dtype, which the CPU backend runs as one all-reduce: docs/distributed.md, "Buckets
   and overlap") counts as one all-reduce of all its elements, plus its staging
   buffer, kept between calls; a reduce-scatter bucket likewise (its staging holds the
   D parts of every slice and their sums). Open MPI's own transport buffers are not counted. A plan
   without collectives (one process) holds none of these. Only the programs `lmrt run`
   runs count, the train step (the first program) and "eval": the buffers grow to the
   largest collective run, and a TP plan's forward all-gathers its [B, T, V] logits,
   which training never does (lmrt eval/sample/forward on the ranks run those). */
int64_t communicationScratch(const plan::Plan &plan) {
  int64_t parts = 0, sums = 0, staging = 0, transient = 0, bucket = 0;
  for (int pi = 0; pi < plan.programs_size(); ++pi) {
    const plan::Program &program = plan.programs(pi);
    if (pi > 0 && program.name() != "eval") continue;
    for (int si = 0; si < program.steps_size(); ++si) {
      const plan::Step &step = program.steps(si);
      const std::string &op = step.op();
      if (op == "all_reduce" && step.inputs_size() == 1 && step.outputs_size() == 1) {
        // The bucket this step starts.
        const plan::TensorType &in = program.buffers(step.inputs(0)).type();
        int64_t n = numElements(in), steps = 1;
        while (si + 1 < program.steps_size() && joinsAllReduceBucket(program, step, program.steps(si + 1))) {
          const plan::Step &next = program.steps(si + 1);
          n += numElements(program.buffers(next.inputs(0)).type());
          ++steps;
          ++si;
        }
        const int64_t d = std::max<int64_t>(1, stepAttrInt(step, "group_size"));
        const int64_t eb = dtypeBytes(in.dtype()), mine = (n + d - 1) / d;
        parts = std::max(parts, d * mine * eb);
        sums = std::max(sums, mine * eb);
        if (steps > 1) bucket = std::max(bucket, n * eb);
        continue;
      }
      if (si + 1 < program.steps_size() && joinsReduceScatterBucket(program, step, program.steps(si + 1))) {
        // A reduce-scatter bucket: one reduce-scatter of all its slices (D of them received),
        // and its staging buffer, the D rank-major parts and the sums, kept between calls.
        int64_t n = numElements(program.buffers(step.outputs(0)).type());
        while (si + 1 < program.steps_size() && joinsReduceScatterBucket(program, step, program.steps(si + 1)))
          n += numElements(program.buffers(program.steps(++si).outputs(0)).type());
        const int64_t d = std::max<int64_t>(1, stepAttrInt(step, "group_size"));
        const int64_t eb = dtypeBytes(program.buffers(step.inputs(0)).type().dtype());
        parts = std::max(parts, d * n * eb);
        bucket = std::max(bucket, (d + 1) * n * eb);
        continue;
      }
      if ((op != "all_reduce" && op != "reduce_scatter" && op != "all_gather") || step.inputs_size() < 1 ||
          step.outputs_size() < 1)
        continue;
      auto group = step.attrs().find("group_size");
      const int64_t d = group == step.attrs().end() ? 1 : std::max<int64_t>(1, group->second.i());
      const plan::TensorType &in = program.buffers(step.inputs(0)).type();
      const plan::TensorType &out = program.buffers(step.outputs(0)).type();
      const int64_t eb = dtypeBytes(in.dtype()), inBytes = typeBytes(in), outBytes = typeBytes(out);
      // The kernels' contiguous copy is skipped along a leading dimension (nothing before
      // it); without a dim attribute it is counted.
      auto dim = step.attrs().find("dim");
      int64_t outer = dim == step.attrs().end() ? 0 : 1;
      for (int64_t k = 0; dim != step.attrs().end() && k < dim->second.i() && k < in.shape_size(); ++k)
        outer *= in.shape((int)k);
      if (op == "all_reduce") {
        const int64_t mine = (numElements(in) + d - 1) / d;
        parts = std::max(parts, d * mine * eb);
        sums = std::max(sums, mine * eb);
      } else if (op == "reduce_scatter") {
        parts = std::max(parts, d * outBytes);
        if (outer != 1) transient = std::max(transient, inBytes);
      } else {
        sums = std::max(sums, inBytes);
        if (outer != 1) transient = std::max(transient, outBytes);
      }
    }
  }
  const plan::Mesh &mesh = plan.train().mesh();
  // Stages 1 and 2 all-gather the parameters after the update (stage 2's reduce-scatters
  // are the train step's, counted above; stage 3's collectives are all the steps').
  if (mesh.zero() >= 1 && mesh.zero() <= 2 && mesh.data() > 1)
    for (const plan::Param &p : plan.params()) {
      const int64_t n = numElements(p.type()), d = mesh.data(), eb = dtypeBytes(p.type().dtype());
      const int64_t chunk = zeroShard(n, d, 0).size();
      if (chunk * d != n) staging = std::max(staging, chunk * d * eb);  // the parameters' padded gather
    }
  return parts + sums + staging + transient + bucket;
}

}  // namespace

PredictedMemory predictedMemory(const plan::Plan &plan) {
  PredictedMemory m;
  const plan::Mesh &mesh = plan.train().mesh();
  const bool zero = mesh.zero() >= 1 && mesh.data() > 1;
  for (const plan::Param &p : plan.params()) {
    // ZeRO stage 3 binds each parameter and gradient as the rank's padded slice (and
    // the optimizer keeps that slice's state); the gathered whole tensors are the
    // programs' temporaries, in the arena.
    const int64_t bytes = typeBytes(boundParamType(plan, p));
    m.params += bytes;
    m.grads += typeBytes(boundGradType(plan, p));  // from stage 2 on, the slice
    if (zeroSlicesParams(mesh)) {
      m.optimizer += 2 * bytes;
      continue;
    }
    // AdamW's m and v; ZeRO-1 keeps rank 0's shard of each (the largest).
    const int64_t n = numElements(p.type());
    m.optimizer += 2 * (zero && n > 0 ? bytes / n * zeroShard(n, mesh.data(), 0).size() : bytes);
  }
  if (plan.programs_size() > 0)  // the train step comes first
    for (const plan::Input &in : plan.programs(0).inputs()) m.inputs += typeBytes(in.type());
  // A plan compiled for CUDA (lmc --target cuda) may run there: its loss scratch is the GPU's.
  bool cuda = false;
  for (const plan::KernelLibrary &l : plan.kernel_libraries()) cuda = cuda || l.target() == "cuda";
  for (const plan::Program &program : plan.programs()) {
    m.arena = std::max(m.arena, program.arena_bytes());
    for (const plan::Step &step : program.steps()) {
      m.matmulScratch = std::max(m.matmulScratch, matmulScratch(program, step));
      m.lossScratch = std::max(m.lossScratch, lossScratch(program, step, cuda));
    }
  }
  m.commScratch = communicationScratch(plan);
  return m;
}

std::string checkPlanType(const plan::TensorType &t) {
  if (std::string(planDTypeName(t.dtype())) == "invalid")
    return "invalid dtype " + std::to_string((int)t.dtype()) + " (expected F32, F64, I32, BF16 or F16)";
  for (int64_t d : t.shape())
    if (d < 0) return "negative dimension " + std::to_string(d) + " in shape";
  // Guard numel()*8 against overflow: nothing real comes near 2^50 bytes. Zero
  // dimensions are left out of the product: numElements multiplies in order, so
  // [2^40, 2^40, 0] (no elements) would overflow int64 before it reached the 0.
  long double n = 1;
  for (int64_t d : t.shape())
    if (d > 0) n *= (long double)d;
  if (n * 8 > (long double)kMaxArenaBytes) return "shape is absurdly large";
  return "";
}

std::string planTypeStr(const plan::TensorType &t) {
  std::string dims;
  for (int i = 0; i < t.shape_size(); ++i) dims += (i ? ", " : "") + std::to_string(t.shape(i));
  if (!checkPlanType(t).empty()) return "invalid[" + dims + "]";
  return std::string(planDTypeName(t.dtype())) + "[" + dims + "]";
}

const char *bufferKindName(plan::Buffer::Kind k) {
  switch (k) {
  case plan::Buffer::ARENA: return "ARENA";
  case plan::Buffer::PARAM: return "PARAM";
  case plan::Buffer::GRAD: return "GRAD";
  case plan::Buffer::INPUT: return "INPUT";
  case plan::Buffer::CONSTANT: return "CONSTANT";
  case plan::Buffer::STATE: return "STATE";
  default: return "invalid";
  }
}

namespace contract {
namespace {

std::string quoted(const std::string &s) { return "\"" + s + "\""; }

}  // namespace

// --- configuration bounds ------------------------------------------------------

std::optional<Violation> checkTrainConfig(const plan::TrainConfig &train) {
  namespace st = settings;
  const plan::Optimizer &o = train.optimizer();
  const plan::Schedule &s = train.schedule();
  // The bounds and their wording are the table's (contract/train_settings.h);
  // `when` says why a setting that only some kinds take is checked.
  auto bound = [](const st::Setting &setting, double v, double atMost = st::kNoLimit,
                  const std::string &when = "") -> std::optional<Violation> {
    if (st::within(setting, v, atMost)) return std::nullopt;
    return Violation{setting.field, st::format(setting, v), st::rule(setting, atMost) + when};
  };
  if (!st::findOptimizer(o.kind()))
    return Violation{"optimizer", quoted(o.kind()),
                     "is not supported (expected " + st::kindList(st::optimizers(), true) + ")"};
  // The optimizer's own settings; the ones it does not take are 0 (absent).
  for (const st::Setting *setting : st::findOptimizer(o.kind())->takes)
    if (auto bad = bound(*setting, trainSettingValue(train, *setting), st::kNoLimit,
                         setting == &st::kLr || o.kind() == st::kDefaultOptimizer ? ""
                                                                                  : " for " + std::string(o.kind())))
      return bad;
  const st::Kind *schedule = st::findSchedule(s.kind());
  if (!schedule)
    return Violation{"schedule", quoted(s.kind()),
                     "is not supported (expected " + st::kindList(st::schedules(), true) + ")"};
  // Absent (0) where the schedule does not take it.
  if (st::takes(*schedule, st::kCooldown))
    if (auto bad = bound(st::kCooldown, s.cooldown_fraction(), st::kNoLimit,
                         " for a " + std::string(schedule->name) + " schedule"))
      return bad;
  if (auto bad = bound(st::kWarmup, (double)s.warmup_steps())) return bad;
  if (auto bad = bound(st::kWarmupFraction, s.warmup_fraction())) return bad;
  if (s.warmup_fraction() > 0 && s.warmup_steps() > 0)
    return Violation{"warmup_fraction", formatG(s.warmup_fraction()),
                     "cannot be combined with warmup_steps " + std::to_string(s.warmup_steps()) + " (one or the other)"};
  if (auto bad = bound(st::kDecaySteps, (double)s.decay_steps())) return bad;
  if (auto bad = bound(st::kMinLr, s.min_lr(), o.lr())) return bad;
  if (auto bad = bound(st::kClipGradNorm, train.clip_grad_norm())) return bad;
  if (auto bad = bound(st::kClipGradValue, train.clip_grad_value())) return bad;
  if (auto bad = bound(st::kEpochs, (double)train.epochs())) return bad;
  for (const plan::ParamGroup &g : train.param_groups()) {
    if (g.patterns().empty()) return Violation{"param_groups", g.source(), "must have a pattern"};
    if (g.has_lr_scale() && !(std::isfinite(g.lr_scale()) && g.lr_scale() >= 0))
      return Violation{"param_groups.lr_scale", formatG(g.lr_scale()), "must be finite and >= 0"};
  }
  // 0 is what plans from before accumulation say: one micro-batch.
  if (train.accumulate() != 0)
    if (auto bad = bound(st::kAccumulate, (double)train.accumulate())) return bad;
  if (train.has_loss_scale()) {
    const plan::LossScale &ls = train.loss_scale();
    if (auto bad = bound(st::kLossScale, ls.initial_scale())) return bad;
    if (auto bad = bound(st::kLossScaleWindow, (double)ls.growth_interval())) return bad;
    if (auto bad = bound(st::kHysteresis, (double)ls.hysteresis())) return bad;
    if (auto bad = bound(st::kMinLossScale, ls.min_scale(), ls.initial_scale())) return bad;
  }
  return std::nullopt;
}

namespace {
/* Which message of a TrainConfig holds `field` (0: the TrainConfig itself, 1: its
   Optimizer, 2: its Schedule, 3: its LossScale), and the field. */
std::pair<int, const google::protobuf::FieldDescriptor *> findTrainField(const char *field) {
  const google::protobuf::Descriptor *messages[] = {plan::TrainConfig::descriptor(), plan::Optimizer::descriptor(),
                                                    plan::Schedule::descriptor(), plan::LossScale::descriptor()};
  for (int i = 0; i < 4; ++i)
    if (const google::protobuf::FieldDescriptor *f = messages[i]->FindFieldByName(field)) return {i, f};
  fail("internal error: the plan's TrainConfig has no field '%s'", field);
}
}  // namespace

double trainSettingValue(const plan::TrainConfig &train, const settings::Setting &s) {
  auto [which, f] = findTrainField(s.field);
  // An absent LossScale reads as its default instance: zeros.
  const google::protobuf::Message *parts[] = {&train, &train.optimizer(), &train.schedule(), &train.loss_scale()};
  const google::protobuf::Message &m = *parts[which];
  const google::protobuf::Reflection *r = m.GetReflection();
  switch (f->cpp_type()) {
  case google::protobuf::FieldDescriptor::CPPTYPE_BOOL: return r->GetBool(m, f) ? 1 : 0;
  case google::protobuf::FieldDescriptor::CPPTYPE_INT64: return (double)r->GetInt64(m, f);
  default: return r->GetDouble(m, f);
  }
}

void setTrainSetting(plan::TrainConfig &train, const settings::Setting &s, double value) {
  auto [which, f] = findTrainField(s.field);
  google::protobuf::Message *parts[] = {&train, train.mutable_optimizer(), train.mutable_schedule(), nullptr};
  google::protobuf::Message *m = which == 3 ? train.mutable_loss_scale() : parts[which];  // made only when set
  const google::protobuf::Reflection *r = m->GetReflection();
  switch (f->cpp_type()) {
  case google::protobuf::FieldDescriptor::CPPTYPE_BOOL: r->SetBool(m, f, value != 0); break;
  case google::protobuf::FieldDescriptor::CPPTYPE_INT64: r->SetInt64(m, f, (int64_t)value); break;
  default: r->SetDouble(m, f, value);
  }
}

bool hasDataConfig(const plan::DataConfig &d) {
  return !d.transform().empty() || d.batch() != 0 || d.seq() != 0 || d.vocab() != 0;
}

std::optional<Violation> checkDataConfig(const plan::DataConfig &d) {
  const data::TransformSpec *spec = data::findTransform(d.transform());
  if (!spec)
    return Violation{"transform", quoted(d.transform()), "is not supported (expected one of " +
                                                             data::transformNames() + ")"};
  if (d.batch() <= 0) return Violation{"batch", std::to_string(d.batch()), "must be given and > 0"};
  if (d.seq() <= 0) return Violation{"seq", std::to_string(d.seq()), "must be given and > 0"};
  if (d.vocab() <= 0) return Violation{"vocab", std::to_string(d.vocab()), "must be given and > 0"};
  for (const auto &[name, value] : d.params()) {
    const data::TransformParam *p = nullptr;
    for (const data::TransformParam &q : spec->params)
      if (name == q.name) p = &q;
    if (!p) return Violation{"params", quoted(name), "is not a parameter of transform " + quoted(spec->name)};
    if (p->choices && (value != std::floor(value) || value < 0 || value >= (double)data::choiceNames(*p).size()))
      return Violation{"params." + name, formatG(value), "must be " + data::choiceList(*p)};
    if (!(value >= p->lo && value <= p->hi) || (p->isBool && value != 0 && value != 1))
      return Violation{"params." + name, formatG(value),
                       p->isBool ? "must be 0 or 1" : "must be in [" + formatG(p->lo) + ", " + formatG(p->hi) + "]"};
    if (p->isInt && value != std::floor(value))
      return Violation{"params." + name, formatG(value), "must be a whole number"};
  }
  if (d.transform() == "mlm" || d.transform() == "span_mlm") {
    if (d.vocab() < data::kMinMlmVocab)
      return Violation{"vocab", std::to_string(d.vocab()),
                       "must be >= " + std::to_string(data::kMinMlmVocab) + " for " + d.transform() +
                           " (the 256 bytes, then [PAD] [CLS] [SEP] [MASK])"};
    if (transformParam(d, "nsp") != 0 && transformParam(d, "sop") != 0)
      return Violation{"params.sop", "1", "cannot be combined with nsp = 1 (a row is one kind of pair)"};
    if (d.transform() == "span_mlm" && transformParam(d, "unit") == 1 &&
        transformParam(d, "max_span") > transformParam(d, "max_span_tokens"))
      return Violation{"params.max_span", formatG(transformParam(d, "max_span")),
                       "must be <= max_span_tokens (" + formatG(transformParam(d, "max_span_tokens")) +
                           ") with unit = \"token\" (1): span_pos indexes max_span_tokens rows"};
    if (d.seq() < (transformParam(d, "nsp") != 0 || transformParam(d, "sop") != 0 ? 5 : 3))
      return Violation{"seq", std::to_string(d.seq()),
                       "is too short for " + d.transform() + " (at least [CLS] a [SEP], and b [SEP] with nsp or sop)"};
  }
  if (d.transform() == "span_corruption") {
    const double density = transformParam(d, "noise_density"), span = transformParam(d, "mean_noise_span_length");
    const data::SpanCorruptionLengths l = data::spanCorruptionLengths(d.seq(), density, span);
    if (l.raw < 0)
      return Violation{"seq", std::to_string(d.seq()),
                       "has no raw length whose span-corrupted inputs are exactly that long "
                       "(compute_input_and_target_lengths)"};
    const int64_t spans = data::spanNoise(l.raw, density, span).spans;
    if (d.vocab() < data::kFirstSpecial + spans)
      return Violation{"vocab", std::to_string(d.vocab()),
                       "must be >= " + std::to_string(data::kFirstSpecial + spans) + " for span_corruption (the 256 "
                       "bytes, then a sentinel for each of the " + std::to_string(spans) + " noise spans of a row)"};
  }
  if (d.transform() == "seq2seq") {
    if (d.vocab() < data::kFirstSpecial)
      return Violation{"vocab", std::to_string(d.vocab()),
                       "must be >= " + std::to_string(data::kFirstSpecial) + " for seq2seq (the 256 bytes)"};
    if (d.seq() < 2) return Violation{"seq", std::to_string(d.seq()), "is too short for seq2seq (a token and EOS)"};
    if (transformParam(d, "target_seq") < 2)
      return Violation{"params.target_seq", formatG(transformParam(d, "target_seq")),
                       "must be >= 2 for seq2seq (a token and EOS; lmc sets it from the decoder inputs)"};
  }
  if (d.transform() == "classify" || d.transform() == "regression" || d.transform() == "sft" ||
      d.transform() == "preference" || d.transform() == "tokens" || d.transform() == "span") {
    if (d.vocab() < data::kMinMlmVocab)
      return Violation{"vocab", std::to_string(d.vocab()),
                       "must be >= " + std::to_string(data::kMinMlmVocab) + " for " + d.transform() +
                           " (the 256 bytes, then [PAD] [CLS] [SEP] [MASK])"};
    if (d.seq() < 3)
      return Violation{"seq", std::to_string(d.seq()),
                       "is too short for " + d.transform() + " (at least [CLS] a [SEP])"};
    if (d.transform() == "span" && d.seq() < 5)
      return Violation{"seq", std::to_string(d.seq()),
                       "is too short for span (at least [CLS] question [SEP] context [SEP])"};
  }
  return std::nullopt;
}

double transformParam(const plan::DataConfig &d, const std::string &name) {
  auto it = d.params().find(name);
  if (it != d.params().end()) return it->second;
  if (const data::TransformSpec *spec = data::findTransform(d.transform()))
    for (const data::TransformParam &p : spec->params)
      if (name == p.name) return p.defaultValue;
  return 0;
}

bool isDropoutKey(const plan::Input &in) { return in.name() == kDropoutKeyInput; }
bool isLossScale(const plan::Input &in) { return in.name() == kLossScaleInput; }

std::string expectedDropoutKey(const plan::Input &in, int64_t rows) {
  const plan::TensorType &t = in.type();
  if (t.dtype() == plan::I32 && t.shape_size() == 2 && t.shape(0) == rows && t.shape(1) == 2) return "";
  return "i32[" + std::to_string(rows) + ", 2] (two random words for each row, from (seed, step, sample))";
}

std::string expectedPipelineInput(const plan::Input &in, const plan::DataConfig &d) {
  if (isLossScale(in)) return "";  // checkLossScale
  return isDropoutKey(in) ? expectedDropoutKey(in, d.batch()) : expectedTransformInput(in, d);
}

std::vector<const plan::Input *> dataInputs(const plan::Program &program) {
  std::vector<const plan::Input *> v;
  for (const plan::Input &in : program.inputs())
    if (!isDropoutKey(in) && !isLossScale(in)) v.push_back(&in);
  return v;
}

std::string expectedTransformInput(const plan::Input &in, const plan::DataConfig &d) {
  const data::TransformSpec *spec = data::findTransform(d.transform());
  if (!spec) return "an input of a known transform";
  bool nsp = transformParam(d, "nsp") != 0, sop = transformParam(d, "sop") != 0,
       pack = transformParam(d, "pack") != 0;
  const data::TransformOutput *o = data::findOutput(*spec, in.name());
  if (!o || !data::produces(*o, nsp, sop, pack))
    return "one of the inputs transform '" + d.transform() + "' produces (" +
           data::outputNames(*spec, nsp, sop, pack) + ")";
  const plan::TensorType &t = in.type();
  bool dtypeOk = o->isFloat ? (t.dtype() == plan::F32 || t.dtype() == plan::F64) : t.dtype() == plan::I32;
  const int64_t len = o->targetSeq ? data::targetSeqLength(d.transform(), d.seq(),
                                                           [&](const char *n) { return transformParam(d, n); })
                                    : d.seq();
  bool shapeOk = o->perRow ? t.shape_size() == 1 && t.shape(0) == d.batch()
                           : t.shape_size() == 2 && t.shape(0) == d.batch() && t.shape(1) == len;
  int64_t bound = data::outputBound(*o, d.vocab(), d.batch(), d.seq(),
                                    [&](const char *n) { return transformParam(d, n); });
  std::string shape = o->perRow ? "[" + std::to_string(d.batch()) + "]"
                                : "[" + std::to_string(d.batch()) + ", " + std::to_string(len) + "]";
  if (!dtypeOk || !shapeOk) return std::string(o->isFloat ? "f32" : "i32") + shape;
  if (bound > 0 && in.vocab() > 0 && in.vocab() < bound)
    return "i32" + shape + " accepting ids below " + std::to_string(bound) + " (it declares " +
           std::to_string(in.vocab()) + ")";
  if (o->ignoreIndex && in.vocab() > 0 && !(in.has_ignore_index() && in.ignore_index() == data::kIgnoreIndex))
    return "i32" + shape + " accepting the ignore index " + std::to_string(data::kIgnoreIndex);
  return "";
}

std::optional<InitViolation> checkInit(const plan::Init &init) {
  switch (init.kind()) {
  case plan::Init::ZEROS:
  case plan::Init::ONES: return std::nullopt;
  case plan::Init::NORMAL:
    if (!std::isfinite(init.mean()) || !std::isfinite(init.std()) || init.std() < 0)
      return InitViolation{"normal", "mean " + formatG(init.mean()) + " and std " + formatG(init.std()),
                           "both must be finite and std >= 0"};
    return std::nullopt;
  case plan::Init::UNIFORM:
    if (!std::isfinite(init.low()) || !std::isfinite(init.high()) || init.low() > init.high())
      return InitViolation{"uniform", "low " + formatG(init.low()) + " and high " + formatG(init.high()),
                           "both must be finite and low <= high"};
    return std::nullopt;
  case plan::Init::BLOCKS:
    if (init.blocks_size() == 0) return InitViolation{"blocks", "no parts", "it needs at least one value"};
    for (double v : init.blocks())
      if (!std::isfinite(v)) return InitViolation{"blocks", "a part " + formatG(v), "every part must be finite"};
    return std::nullopt;
  case plan::Init::ORTHOGONAL:
    if (!std::isfinite(init.gain()))
      return InitViolation{"orthogonal", "gain " + formatG(init.gain()), "the gain must be finite"};
    if (init.orthogonal_blocks() < 0)
      return InitViolation{"orthogonal", std::to_string(init.orthogonal_blocks()) + " blocks",
                           "the blocks must be at least 1"};
    return std::nullopt;
  default: return InitViolation{"", "", "unknown init kind " + std::to_string((int)init.kind())};
  }
}

std::string checkBlocksShape(const plan::Init &init, const plan::TensorType &type) {
  if (init.kind() == plan::Init::ORTHOGONAL) {
    int64_t blocks = std::max<int64_t>(1, init.orthogonal_blocks());
    int64_t last = type.shape_size() ? type.shape(type.shape_size() - 1) : 0;
    if (type.shape_size() < 2)
      return "has an orthogonal init, which needs a matrix (rank >= 2), not rank " +
             std::to_string(type.shape_size());
    if (last > 0 && last % blocks == 0) return "";
    return "has an orthogonal init of " + std::to_string(blocks) + " blocks, which do not divide its last dimension (" +
           std::to_string(last) + ")";
  }
  if (init.kind() != plan::Init::BLOCKS || init.blocks_size() == 0) return "";
  int64_t last = type.shape_size() ? type.shape(type.shape_size() - 1) : 0;
  if (last > 0 && last % init.blocks_size() == 0) return "";
  return "has a blocks init of " + std::to_string(init.blocks_size()) +
         " parts, which do not divide its last dimension (" + (last > 0 ? std::to_string(last) : "a scalar has none") +
         ")";
}

bool isForwardProgram(const std::string &program) {
  return program == "forward" || (program.rfind("forward:", 0) == 0 && program.size() > 8);
}

std::string expectedTokenInput(const std::string &program, const plan::TensorType &t, const plan::DataConfig &d) {
  // train_step and eval read one window of seq + 1 ids per row (inputs and
  // next-token targets); forward (sampling) reads the ids themselves.
  bool forward = isForwardProgram(program);
  bool ok = t.dtype() == plan::I32 && t.shape_size() == 2 && t.shape(0) == d.batch() &&
            (forward ? t.shape(1) >= 1 && t.shape(1) <= d.seq() : t.shape(1) == d.seq() + 1);
  if (ok) return "";
  return "i32[" + std::to_string(d.batch()) + ", " +
         (forward ? "T <= " + std::to_string(d.seq()) : std::to_string(d.seq() + 1)) + "]";
}

bool tokenVocabFits(const plan::Input &in, const plan::DataConfig &d) {
  return in.vocab() <= 0 || d.vocab() <= in.vocab();
}

// --- the whole plan ------------------------------------------------------------

namespace {

const char *const kGradPrefix = "grad:";
const char *const kMetricPrefix = "metric:";

/* Thrown by Validator::error and caught by checkPlan: the first problem ends
   the check. */
struct Broken {
  std::string message;
};

class Validator {
public:
  Validator(const plan::Plan &plan, const StepCheck &stepCheck) : plan_(plan), stepCheck_(stepCheck) {}

  void run() {
    checkParams();
    checkStates();
    checkKernels();
    checkDeclaredInputs("plan", plan_.inputs());
    std::set<std::string> seen;
    for (const plan::Program &prog : plan_.programs()) {
      if (prog.name() != "train_step" && prog.name() != "eval" && !isForwardProgram(prog.name()) &&
          !isInference(prog.name()))
        error("unknown program '" + prog.name() +
              "' (expected train_step, eval, forward, forward:<model>, prefill, decode or encode)");
      if (!seen.insert(prog.name()).second) error("program '" + prog.name() + "' appears twice");
      checkProgram(prog);
    }
    for (const char *required : {"train_step", "eval"})
      if (!seen.count(required)) error(std::string("has no '") + required + "' program");
    if (seen.count("forward"))
      for (const std::string &name : seen)
        if (name != "forward" && isForwardProgram(name))
          error("has both 'forward' and '" + name + "' (one model: 'forward'; several: 'forward:<model>' each)");
    if (seen.count("prefill") != seen.count("decode"))
      error(std::string("has a '") + (seen.count("prefill") ? "prefill" : "decode") + "' program but no '" +
            (seen.count("prefill") ? "decode" : "prefill") + "' (incremental decoding needs both)");
    if (plan_.states_size() > 0 && !seen.count("prefill"))
      error("declares states but has no prefill and decode programs to use them");
    if (seen.count("encode") && !seen.count("prefill"))
      error("has an 'encode' program but no 'prefill' and 'decode' (the decoder it encodes for)");
    checkTrain();
    checkData();
    checkWeightExports();
    if (plan_.flops_per_step() < 0) error("negative flops_per_step");
    if (plan_.predicted_peak_bytes() < 0) error("negative predicted_peak_bytes");
  }

private:
  const plan::Plan &plan_;
  const StepCheck &stepCheck_;
  std::map<std::string, const plan::Param *> params_;
  std::map<std::string, const plan::State *> states_;

  /* The programs of incremental decoding, which alone read and write STATE buffers. */
  static bool isInference(const std::string &program) {
    return program == "prefill" || program == "decode" || program == "encode";
  }

  [[noreturn]] void error(const std::string &msg) const { throw Broken{msg}; }

  // --- parameters and inputs -------------------------------------------------

  void checkParams() {
    int64_t count = 0;
    for (int i = 0; i < plan_.params_size(); ++i) {
      const plan::Param &p = plan_.params(i);
      std::string where = "parameter " + std::to_string(i) + " '" + p.name() + "': ";
      if (p.name().empty()) error("parameter " + std::to_string(i) + " has an empty name");
      if (!params_.emplace(p.name(), &p).second) error(where + "declared twice");
      std::string bad = checkPlanType(p.type());
      if (!bad.empty()) error(where + bad);
      if (p.type().dtype() == plan::I32) error(where + "parameters must be f32 or f64, not i32");
      if (std::optional<InitViolation> v = checkInit(p.init()))
        error(where + (v->kind.empty() ? v->rule : "has a " + v->kind + " init with " + v->values + "; " + v->rule));
      else if (std::string b = checkBlocksShape(p.init(), p.type()); !b.empty())
        error(where + b);
      if (p.has_sharding()) checkSharding(p, where);
      count += numElements(p.type());
    }
    if (plan_.param_count() != count)
      error("param_count says " + std::to_string(plan_.param_count()) +
            " but the parameters hold " + std::to_string(count) + " elements");
  }

  /* A tensor-parallel parameter's slice (ParamSharding): one dimension of the local
     type, over the plan's tensor axis, whose segments each hold a whole block. */
  void checkSharding(const plan::Param &p, const std::string &where) {
    const plan::ParamSharding &s = p.sharding();
    const int64_t tensor = plan_.train().mesh().tensor();
    if (tensor < 2) {
      error(where + "has a sharding, and the plan's mesh has no tensor axis (tensor = " + std::to_string(tensor) + ")");
      return;
    }
    if (s.mesh_axis() != 1 || s.shards() != tensor)
      error(where + "is split over mesh axis " + std::to_string(s.mesh_axis()) + " into " + std::to_string(s.shards()) +
            " shards; a parameter splits over mesh axis 1 (tensor) into its " + std::to_string(tensor) + " ranks");
    if (s.dim() < 0 || s.dim() >= p.type().shape_size() || s.segments() < 1 ||
        p.type().shape(static_cast<int>(s.dim())) % s.segments() != 0) {
      error(where + "has sharding dim " + std::to_string(s.dim()) + " with " + std::to_string(s.segments()) +
            " segments, which its type " + planTypeStr(p.type()) + " cannot hold");
      return;
    }
    const int64_t block = p.type().shape(static_cast<int>(s.dim()));
    if (s.logical_size() != 0 && (s.logical_size() < 0 || s.segments() != 1 || s.shards() < 1 ||
                                  !splitPaddingFits(s.logical_size(), block, s.shards())))
      error(where + "has a padded sharding of logical size " + std::to_string(s.logical_size()) + " in " +
            std::to_string(s.shards()) + " blocks of " + std::to_string(block) + " (" +
            std::to_string(s.segments()) + " segments); a padded split has one segment, and every rank holds part "
            "of the logical size and at most one block of padding");
  }

  /* States are float [1, W, D] tensors (key/value caches) with unique names. */
  void checkStates() {
    for (int i = 0; i < plan_.states_size(); ++i) {
      const plan::State &st = plan_.states(i);
      std::string where = "state " + std::to_string(i) + " '" + st.name() + "': ";
      if (st.name().empty()) error("state " + std::to_string(i) + " has an empty name");
      if (!states_.emplace(st.name(), &st).second) error(where + "declared twice");
      std::string bad = checkPlanType(st.type());
      if (!bad.empty()) error(where + bad);
      if (st.type().dtype() == plan::I32 || st.type().shape_size() != 3 || st.type().shape(0) != 1)
        error(where + "is " + planTypeStr(st.type()) + "; a state is a float [1, window, dim] cache");
    }
  }

  /* The name maps of `export` sections (docs/plan-format.md, "Weight exports"):
     every parameter mapped or omitted exactly once, every foreign name used once, config
     values plain scalars. What the exporter and importer rely on, checked here so a
     hand-edited plan cannot make them write a file that silently lacks a tensor. */
  void checkWeightExports() {
    // One map of a format maps every parameter; several (one per model class:
    // ELECTRA's generator and discriminator) each map some, together all.
    std::map<std::string, int> count;
    std::map<std::string, std::set<std::string>> covered;
    std::set<std::pair<std::string, std::string>> classes;
    for (const plan::WeightExport &w : plan_.weight_exports()) ++count[w.format()];
    for (int k = 0; k < plan_.weight_exports_size(); ++k) {
      const plan::WeightExport &w = plan_.weight_exports(k);
      std::string where = "weight export " + std::to_string(k) + " ('" + w.format() + "'): ";
      if (w.format() != "hf") error(where + "unknown format (expected hf)");
      if (w.architecture().empty()) error(where + "has no architecture");
      if (!classes.insert({w.format(), w.architecture()}).second)
        error(where + "a second map for this format and architecture '" + w.architecture() + "'");
      for (const auto &[key, value] : w.config()) {
        if (key.empty() || key == "architectures")
          error(where + "config key '" + key + "' is reserved or empty");
        switch (value.value_case()) {
        case plan::Attr::kI: case plan::Attr::kB: case plan::Attr::kS: break;
        case plan::Attr::kF:
          if (!std::isfinite(value.f())) error(where + "config '" + key + "' is not finite");
          break;
        default: error(where + "config '" + key + "' is not an integer, number, bool or string");
        }
      }
      std::set<std::string> mapped, names;
      for (const plan::WeightMapEntry &e : w.entries()) {
        auto it = params_.find(e.param());
        if (it == params_.end()) error(where + "maps '" + e.param() + "', which is not a parameter");
        if (!mapped.insert(e.param()).second) error(where + "maps parameter '" + e.param() + "' twice");
        if (e.names().empty()) error(where + "parameter '" + e.param() + "' has no name");
        for (const std::string &n : e.tied())
          if (n.empty() || !names.insert(n).second)
            error(where + "tied name '" + n + "' (of parameter '" + e.param() + "') is empty or used twice");
        for (const std::string &n : e.names())
          if (n.empty() || !names.insert(n).second)
            error(where + "name '" + n + "' (of parameter '" + e.param() + "') is empty or used twice");
        if (e.transpose() && it->second->type().shape_size() != 2)
          error(where + "parameter '" + e.param() + "' is " + planTypeStr(it->second->type()) +
                ": only 2-D parameters can be transposed");
      }
      if (w.entries().empty()) error(where + "maps no parameter");
      // Omitted: parameters the model class lacks (never written, --base on import).
      std::set<std::string> omitted;
      for (const std::string &o : w.omitted()) {
        if (!params_.count(o)) error(where + "omits '" + o + "', which is not a parameter");
        if (!omitted.insert(o).second) error(where + "omits parameter '" + o + "' twice");
        if (mapped.count(o)) error(where + "both maps and omits parameter '" + o + "'");
      }
      covered[w.format()].insert(mapped.begin(), mapped.end());
      covered[w.format()].insert(omitted.begin(), omitted.end());
      if (count[w.format()] == 1)
        for (const plan::Param &p : plan_.params())
          if (!mapped.count(p.name()) && !omitted.count(p.name()))
            error(where + "parameter '" + p.name() + "' is neither mapped nor omitted");
    }
    for (const auto &[format, n] : count)
      if (n > 1)
        for (const plan::Param &p : plan_.params())
          if (!covered[format].count(p.name()))
            error("weight exports ('" + format + "'): no map maps or omits parameter '" + p.name() + "'");
  }

  template <typename Inputs> void checkDeclaredInputs(const std::string &owner, const Inputs &ins) {
    std::set<std::string> seen;
    for (const plan::Input &in : ins) {
      std::string where = owner + " input '" + in.name() + "': ";
      if (in.name().empty()) error(owner + " has an input with an empty name");
      if (!seen.insert(in.name()).second) error(where + "declared twice");
      std::string bad = checkPlanType(in.type());
      if (!bad.empty()) error(where + bad);
      if (in.vocab() < 0) error(where + "negative vocab " + std::to_string(in.vocab()));
      if (in.vocab() > 0 && in.type().dtype() != plan::I32)
        error(where + "has a vocab bound but is " + planTypeStr(in.type()) + ", not i32");
    }
  }

  // --- programs ----------------------------------------------------------------

  struct Range {
    int64_t begin = 0, end = 0;
    bool overlaps(const Range &o) const { return begin < o.end && o.begin < end; }
  };

  /* Which buffer last wrote each byte of the arena, as disjoint segments
     begin -> (end, buffer). A write of [b, e) reports every buffer whose bytes it
     overwrites (they die) and takes the range over. Each write costs O(log n) plus
     the segments it removes, so checking a program is O(steps log buffers); killing
     by scanning every buffer at every write was quadratic (1000 layers: minutes).
     Zero-size buffers own no bytes; one dies when a write strictly contains its
     offset (what Range::overlaps says), kept in `empty`. */
  class ArenaOwners {
  public:
    template <typename Kill> void write(int64_t b, int64_t e, int owner, Kill kill) {
      if (b < e) {
        split(b);
        split(e);
        for (auto it = segments_.lower_bound(b); it != segments_.end() && it->first < e;) {
          if (it->second.second != owner) kill(it->second.second);
          it = segments_.erase(it);
        }
        segments_[b] = {e, owner};
      }
      for (auto it = empty_.upper_bound({b, INT_MAX}); it != empty_.end() && it->first < e;) {
        if (it->second != owner) kill(it->second);
        it = empty_.erase(it);
      }
      if (b == e) empty_.insert({b, owner});
    }

  private:
    void split(int64_t x) {
      auto it = segments_.upper_bound(x);
      if (it == segments_.begin()) return;
      --it;
      if (it->first < x && x < it->second.first) {
        std::pair<int64_t, int> rest = it->second;
        it->second.first = x;
        segments_[x] = rest;
      }
    }
    std::map<int64_t, std::pair<int64_t, int>> segments_;
    std::set<std::pair<int64_t, int>> empty_;
  };

  void checkProgram(const plan::Program &prog) {
    std::string where = "program '" + prog.name() + "'";
    if (prog.arena_bytes() < 0 || prog.arena_bytes() > kMaxArenaBytes)
      error(where + ": arena_bytes " + std::to_string(prog.arena_bytes()) + " is outside [0, 2^50]");
    if (prog.flops() < 0) error(where + ": negative flops");
    checkDeclaredInputs(where, prog.inputs());
    std::map<std::string, const plan::Input *> inputs;
    for (const plan::Input &in : prog.inputs()) inputs[in.name()] = &in;

    const int n = prog.buffers_size();
    std::vector<Range> ranges(n);
    std::map<std::string, int> gradBuffers;
    for (int i = 0; i < n; ++i)
      checkBuffer(prog, i, inputs, ranges[i], gradBuffers);
    // The interface of an inference program before its steps: a wrong window
    // is reported as such, not as the first step it breaks.
    if (isInference(prog.name())) checkInferenceInputs(prog);

    // Dataflow: PARAM, INPUT and CONSTANT buffers hold values from the start;
    // ARENA and GRAD buffers only once a step writes them, and an ARENA value dies
    // when a step writes an overlapping buffer (the memory planner reused it).
    std::vector<bool> live(n, false);
    for (int i = 0; i < n; ++i) {
      auto k = prog.buffers(i).kind();
      live[i] = k == plan::Buffer::PARAM || k == plan::Buffer::INPUT || k == plan::Buffer::CONSTANT ||
                k == plan::Buffer::STATE;  // a state holds the previous run's value (zeros at load)
    }
    ArenaOwners owners;
    std::vector<std::vector<int>> views(n);  // the views of each buffer (checked above: never of a view)
    for (int i = 0; i < n; ++i)
      if (prog.buffers(i).has_view_of()) views[prog.buffers(i).view_of()].push_back(i);
    for (int s = 0; s < prog.steps_size(); ++s) checkStep(prog, s, ranges, live, owners, views);

    std::set<std::string> names;
    for (const plan::Output &out : prog.outputs()) {
      std::string ow = where + ", output '" + out.name() + "': ";
      if (!names.insert(out.name()).second) error(ow + "declared twice");
      if (out.buffer() < 0 || out.buffer() >= n)
        error(ow + "buffer id " + std::to_string(out.buffer()) + " out of range (program has " +
              std::to_string(n) + " buffers)");
      if (!live[out.buffer()])
        error(ow + "buffer " + std::to_string(out.buffer()) +
              (prog.buffers(out.buffer()).kind() == plan::Buffer::ARENA
                   ? " does not hold a value at the end of the program (never written, or "
                     "overwritten by an aliasing arena buffer)"
                   : " is never written"));
    }
    checkConventions(prog);
  }

  void checkBuffer(const plan::Program &prog, int i,
                   const std::map<std::string, const plan::Input *> &inputs, Range &range,
                   std::map<std::string, int> &gradBuffers) {
    const plan::Buffer &b = prog.buffers(i);
    std::string where = "program '" + prog.name() + "', buffer " + std::to_string(i) + " (" +
                        bufferKindName(b.kind()) + (b.name().empty() ? "" : " '" + b.name() + "'") +
                        "): ";
    std::string bad = checkPlanType(b.type());
    if (!bad.empty()) error(where + bad);
    std::string t = planTypeStr(b.type());
    if (b.size_bytes() != typeBytes(b.type()))
      error(where + "size_bytes " + std::to_string(b.size_bytes()) + " but " + t + " needs " +
            std::to_string(typeBytes(b.type())));
    if (b.kind() != plan::Buffer::CONSTANT && !b.data().empty())
      error(where + "only CONSTANT buffers carry data");
    if (b.kind() != plan::Buffer::ARENA && b.has_view_of())
      error(where + "only ARENA buffers can be views");
    switch (b.kind()) {
    case plan::Buffer::ARENA:
      if (b.has_view_of()) {
        const int of = b.view_of();
        if (of < 0 || of >= prog.buffers_size() || of == i)
          error(where + "is a view of buffer " + std::to_string(of) + ", which is not another buffer of the program");
        const plan::Buffer &base = prog.buffers(of);
        if (base.kind() != plan::Buffer::ARENA || base.has_view_of())
          error(where + "is a view of buffer " + std::to_string(of) + ", a " + bufferKindName(base.kind()) +
                (base.has_view_of() ? " view" : "") + " buffer; a view names an ARENA buffer that is not a view");
        if (base.offset() != b.offset() || base.size_bytes() != b.size_bytes())
          error(where + "is a view of buffer " + std::to_string(of) + " but its bytes [" + std::to_string(b.offset()) +
                ", " + std::to_string(b.offset() + b.size_bytes()) + ") are not that buffer's [" +
                std::to_string(base.offset()) + ", " + std::to_string(base.offset() + base.size_bytes()) + ")");
      }
      if (b.offset() < 0 || b.offset() % kArenaAlignment != 0)
        error(where + "offset " + std::to_string(b.offset()) + " is not a non-negative multiple of " +
              std::to_string(kArenaAlignment));
      // Written as a subtraction: offset + size could overflow on a hostile plan.
      if (b.offset() > prog.arena_bytes() - b.size_bytes())
        error(where + "bytes [" + std::to_string(b.offset()) + ", " +
              std::to_string(b.offset() + b.size_bytes()) + ") overflow the arena of " +
              std::to_string(prog.arena_bytes()) + " bytes");
      range = {b.offset(), b.offset() + b.size_bytes()};
      return;
    case plan::Buffer::PARAM:
    case plan::Buffer::GRAD: {
      auto it = params_.find(b.name());
      if (it == params_.end()) error(where + "no parameter named '" + b.name() + "'");
      // ZeRO stage 3's programs bind the rank's slice of it, stage 2's train step the
      // slice of its gradient (contract/zero3.h).
      const bool grad = b.kind() == plan::Buffer::GRAD;
      const plan::TensorType pt = grad ? boundGradType(plan_, *it->second) : boundParamType(plan_, *it->second);
      const bool sliced = grad ? zeroSlicesGrads(plan_.train().mesh()) : zeroSlicesParams(plan_.train().mesh());
      if (planTypeStr(pt) != t)
        error(where + "type " + t + " differs from the parameter's " + (grad ? "gradient's " : "") + planTypeStr(pt) +
              (sliced ? " (its ZeRO stage " + std::to_string(plan_.train().mesh().zero()) + " slice)" : ""));
      if (b.kind() == plan::Buffer::GRAD) {
        auto [prev, fresh] = gradBuffers.emplace(b.name(), i);
        if (!fresh)
          error(where + "the gradient of '" + b.name() + "' is already buffer " +
                std::to_string(prev->second));
      }
      return;
    }
    case plan::Buffer::INPUT: {
      auto it = inputs.find(b.name());
      if (it == inputs.end())
        error(where + "'" + b.name() + "' is not among the program's declared inputs");
      std::string declared = planTypeStr(it->second->type());
      if (declared != t) error(where + "type " + t + " differs from the declared input " + declared);
      return;
    }
    case plan::Buffer::STATE: {
      auto it = states_.find(b.name());
      if (it == states_.end()) error(where + "no state named '" + b.name() + "'");
      if (!isInference(prog.name())) error(where + "only the prefill, decode and encode programs use states");
      const plan::TensorType &st = it->second->type();
      if (planTypeStr(st) != t) error(where + "type " + t + " differs from the state's " + planTypeStr(st));
      return;
    }
    case plan::Buffer::CONSTANT:
      if ((int64_t)b.data().size() != b.size_bytes())
        error(where + "holds " + std::to_string(b.data().size()) + " data bytes, " + t + " needs " +
              std::to_string(b.size_bytes()));
      return;
    default: error(where + "unknown buffer kind " + std::to_string((int)b.kind()));
    }
  }

  void checkStep(const plan::Program &prog, int s, const std::vector<Range> &ranges,
                 std::vector<bool> &live, ArenaOwners &owners, const std::vector<std::vector<int>> &views) {
    const plan::Step &step = prog.steps(s);
    std::string where = "program '" + prog.name() + "', step " + std::to_string(s) + " (" +
                        (step.op().empty() ? "<no op>" : step.op()) +
                        (step.loc().empty() ? "" : ", from " + step.loc()) + "): ";
    // A fused step's arity and types are those of its generated kernel.
    const bool fused = step.op() == ops::kFusedOpName;
    const ops::OpInfo *info = fused ? nullptr : ops::findOp(step.op());
    if (!fused && !info) error(where + "no kernel for op '" + step.op() + "'");
    const plan::Kernel *gen = fused ? &fusedKernel(step, where) : nullptr;
    int wantIn = fused ? gen->num_inputs() : info->numInputs;
    int wantOut = fused ? gen->args_size() - gen->num_inputs() : info->numOutputs;
    if (step.inputs_size() != wantIn || step.outputs_size() != wantOut)
      error(where + "takes " + std::to_string(wantIn) + " inputs and " + std::to_string(wantOut) +
            " outputs, the step has " + std::to_string(step.inputs_size()) + " and " +
            std::to_string(step.outputs_size()));
    if (!fused) checkStepAttrs(step, *info, where);
    if (step.flops() < 0) error(where + "negative flops");
    const int n = prog.buffers_size();
    auto checkId = [&](int id, const char *role, int k) {
      if (id < 0 || id >= n)
        error(where + role + " " + std::to_string(k) + " is buffer " + std::to_string(id) +
              ", out of range (program has " + std::to_string(n) + " buffers)");
    };
    std::vector<plan::TensorType> in, out;
    for (int k = 0; k < step.inputs_size(); ++k) {
      int id = step.inputs(k);
      checkId(id, "input", k);
      if (!live[id])
        error(where + "input " + std::to_string(k) + " reads buffer " + std::to_string(id) +
              " before any step writes it" +
              (prog.buffers(id).kind() == plan::Buffer::ARENA
                   ? " (or after an aliasing arena buffer overwrote it)"
                   : ""));
      in.push_back(prog.buffers(id).type());
    }
    for (int k = 0; k < step.outputs_size(); ++k) {
      int id = step.outputs(k);
      checkId(id, "output", k);
      auto kind = prog.buffers(id).kind();
      if (kind == plan::Buffer::STATE && !(inPlaceUpdate(step, info, k) && info->updatesState))
        error(where + "output " + std::to_string(k) + " writes STATE buffer " + std::to_string(id) +
              "; only an op that updates state in place (cache_write) writes one, as its output 0, the "
              "buffer it reads as input 0");
      if (kind != plan::Buffer::ARENA && kind != plan::Buffer::GRAD && kind != plan::Buffer::STATE)
        error(where + "output " + std::to_string(k) + " writes buffer " + std::to_string(id) +
              ", a " + bufferKindName(kind) + " buffer (steps write only ARENA, GRAD and STATE buffers)");
      if (prog.buffers(id).has_view_of())
        error(where + "output " + std::to_string(k) + " writes buffer " + std::to_string(id) + ", a view of buffer " +
              std::to_string(prog.buffers(id).view_of()) + " (views are never written)");
      if (kind == plan::Buffer::GRAD && prog.name() != "train_step")
        error(where + "output " + std::to_string(k) + " writes a GRAD buffer outside train_step");
      out.push_back(prog.buffers(id).type());
    }
    // Kernels never run in place: an output must not share bytes with an input or
    // with another output of the same step.
    for (int k = 0; k < step.outputs_size(); ++k) {
      int o = step.outputs(k);
      auto clash = [&](int other, const char *role) {
        if (other == o || (prog.buffers(o).kind() == plan::Buffer::ARENA &&
                           prog.buffers(other).kind() == plan::Buffer::ARENA &&
                           ranges[o].overlaps(ranges[other])))
          error(where + "output buffer " + std::to_string(o) + " overlaps " + role + " buffer " +
                std::to_string(other) + " in the arena (kernels do not run in place)");
      };
      for (int i = 0; i < step.inputs_size(); ++i)
        if (!(i == 0 && inPlaceUpdate(step, info, k))) clash(step.inputs(i), "input");
      for (int j = 0; j < k; ++j) clash(step.outputs(j), "output");
    }
    if (fused) {
      std::string msg = checkFusedArgs(*gen, in, out);
      if (!msg.empty()) error(where + msg);
    } else if (stepCheck_) {
      std::string msg = stepCheck_(step, in, out);
      if (!msg.empty()) error(where + msg);
    }
    // Writes kill every other arena value sharing bytes with the output (and that
    // value's views), and give the output's views their value.
    auto kill = [&](int c) {
      live[c] = false;
      for (int v : views[c]) live[v] = false;
    };
    for (int o : step.outputs())
      if (prog.buffers(o).kind() == plan::Buffer::ARENA) owners.write(ranges[o].begin, ranges[o].end, o, kill);
    for (int o : step.outputs()) {
      live[o] = true;
      for (int v : views[o]) live[v] = true;
    }
  }

  /* Output k of `step` is written over its input 0: an op marked updatesState
     (a STATE buffer) or overwritesInput0 (any buffer it may write) in the op table,
     output 0 being the buffer that is input 0. */
  static bool inPlaceUpdate(const plan::Step &step, const ops::OpInfo *info, int k) {
    return info && (info->updatesState || info->overwritesInput0) && k == 0 && step.inputs_size() > 0 &&
           step.outputs_size() > 0 && step.inputs(0) == step.outputs(0);
  }

  // --- generated kernels ---------------------------------------------------------

  /* Each kernel's declared signature and schedule, and each library's image against
     its checksum: a plan whose kernel bytes were altered is refused here, before
     anything of it is loaded or run. */
  void checkKernels() {
    if (plan_.kernels_size() > 0 && plan_.kernel_libraries_size() == 0)
      error("has " + std::to_string(plan_.kernels_size()) + " generated kernels but no compiled kernel library");
    std::set<std::string> names;
    for (int i = 0; i < plan_.kernels_size(); ++i) {
      const plan::Kernel &k = plan_.kernels(i);
      std::string where = "kernel " + std::to_string(i) + " '" + k.name() + "': ";
      if (k.name().empty() || k.name().find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
        error(where + "the entry symbol must be a non-empty [a-z0-9_] name");
      if (!names.insert(k.name()).second) error(where + "declared twice");
      if (k.rows() <= 0 || k.cols() <= 0 || k.rows() > kMaxArenaBytes / k.cols())
        error(where + "iteration space [" + std::to_string(k.rows()) + ", " + std::to_string(k.cols()) +
              "] must be positive and bounded");
      if (k.num_inputs() < 0 || k.num_inputs() >= k.args_size())
        error(where + "num_inputs " + std::to_string(k.num_inputs()) + " must leave at least one of its " +
              std::to_string(k.args_size()) + " args as an output");
      for (int a = 0; a < k.args_size(); ++a) {
        std::string bad = checkPlanType(k.args(a));
        if (!bad.empty()) error(where + "arg " + std::to_string(a) + ": " + bad);
      }
      if (k.schedule() == plan::Kernel::MATMUL_EPILOGUE) checkEpilogue(k, where);
    }
    for (int i = 0; i < plan_.kernel_libraries_size(); ++i) {
      const plan::KernelLibrary &l = plan_.kernel_libraries(i);
      std::string where = "kernel library " + std::to_string(i) + " (" + l.target() + "): ";
      if (l.target() != "cuda" && l.target().rfind("cpu-", 0) != 0)
        error(where + "unknown target (expected cpu-<isa> or cuda)");
      if (fnv1a64(l.image().data(), l.image().size()) != l.image_fnv1a())
        error(where + "its compiled image does not match its checksum (the kernel bytes were altered); "
                      "refusing to load it");
    }
  }

  void checkEpilogue(const plan::Kernel &k, const std::string &where) {
    int n = k.args_size(), nin = k.num_inputs();
    if (k.product_arg() < nin || k.product_arg() >= n) error(where + "product_arg must be an output");
    if (k.lhs_arg() < 0 || k.lhs_arg() >= nin || k.rhs_arg() < 0 || k.rhs_arg() >= nin)
      error(where + "lhs_arg and rhs_arg must be inputs");
    const plan::TensorType &lhs = k.args(k.lhs_arg()), &rhs = k.args(k.rhs_arg()), &prod = k.args(k.product_arg());
    auto dims = [](const plan::TensorType &t) { return shapes::Dims(t.shape().begin(), t.shape().end()); };
    std::string err;
    auto shape = shapes::matmul(dims(lhs), dims(rhs), false, k.transpose_rhs(), err);
    if (!shape) error(where + err);
    if (rhs.shape_size() != 2 || *shape != dims(prod) || prod.shape_size() == 0 ||
        prod.shape(prod.shape_size() - 1) != k.cols() || numElements(prod) != k.rows() * k.cols() ||
        lhs.dtype() != rhs.dtype() || prod.dtype() == plan::I32 ||
        prod.dtype() != (lhs.dtype() == plan::BF16 || lhs.dtype() == plan::F16 ? plan::F32 : lhs.dtype()))
      error(where + "product " + planTypeStr(prod) + " is not the [rows, cols] product of lhs " + planTypeStr(lhs) +
            " and rhs " + planTypeStr(rhs));
  }

  const plan::Kernel &fusedKernel(const plan::Step &step, const std::string &where) {
    auto it = step.attrs().find("kernel");
    if (it == step.attrs().end() || it->second.value_case() != plan::Attr::kI)
      error(where + "a fused step needs an integer attribute 'kernel'");
    if (step.attrs_size() != 1) error(where + "a fused step has only the attribute 'kernel'");
    int64_t k = it->second.i();
    if (k < 0 || k >= plan_.kernels_size())
      error(where + "kernel " + std::to_string(k) + " is out of range (the plan has " +
            std::to_string(plan_.kernels_size()) + ")");
    return plan_.kernels((int)k);
  }

  /* "" when the step's buffers have exactly the types the kernel was compiled for. */
  static std::string checkFusedArgs(const plan::Kernel &k, const std::vector<plan::TensorType> &in,
                                    const std::vector<plan::TensorType> &out) {
    for (int a = 0; a < k.args_size(); ++a) {
      const plan::TensorType &got = a < k.num_inputs() ? in[a] : out[a - k.num_inputs()];
      if (got.SerializeAsString() != k.args(a).SerializeAsString())
        return "kernel '" + k.name() + "' was compiled for arg " + std::to_string(a) + " of type " +
               planTypeStr(k.args(a)) + ", the step passes " + planTypeStr(got);
    }
    return "";
  }

  // The step's attributes are the op's (contract/op_table.h, from the ODS):
  // a misspelt one would be ignored by the kernel, which would run with the
  // default instead (a renamed transpose_rhs trains with wrong gradients).
  void checkStepAttrs(const plan::Step &step, const ops::OpInfo &op, const std::string &where) {
    auto listed = [&] {
      if (op.numAttrs == 0) return std::string("it has none");
      std::string names;
      for (int i = 0; i < op.numAttrs; ++i) names += std::string(i ? ", " : "") + op.attrs[i].name;
      return "it has " + names;
    };
    // Sorted, so the first problem reported does not depend on the map's order.
    std::map<std::string, const plan::Attr *> attrs;
    for (const auto &[name, value] : step.attrs()) attrs[name] = &value;
    for (const auto &[name, value] : attrs) {
      const ops::AttrInfo *attr = op.findAttr(name);
      if (!attr)
        error(where + "unknown attribute '" + name + "' for op '" + op.name + "' (" + listed() + ")");
      auto c = value->value_case();
      bool ok = attr->kind == ops::AttrKind::Int     ? c == plan::Attr::kI
                : attr->kind == ops::AttrKind::Float ? c == plan::Attr::kF || c == plan::Attr::kI
                : attr->kind == ops::AttrKind::Bool  ? c == plan::Attr::kB
                                                     : c == plan::Attr::kInts;
      if (!ok)
        error(where + "attribute '" + name + "' must be " + ops::attrKindName(attr->kind));
    }
    for (int i = 0; i < op.numAttrs; ++i)
      if (!op.attrs[i].hasDefault && !attrs.count(op.attrs[i].name))
        error(where + "missing attribute '" + op.attrs[i].name + "' (" + ops::attrKindName(op.attrs[i].kind) +
              ", no default)");
  }

  const plan::Output *findOutput(const plan::Program &prog, const std::string &name) {
    for (const plan::Output &o : prog.outputs())
      if (o.name() == name) return &o;
    return nullptr;
  }

  void requireOutput(const plan::Program &prog, const std::string &name, bool scalar) {
    const plan::Output *o = findOutput(prog, name);
    std::string where = "program '" + prog.name() + "'";
    if (!o) error(where + " has no '" + name + "' output");
    const plan::TensorType &t = prog.buffers(o->buffer()).type();
    if (t.dtype() == plan::I32 || (scalar && t.shape_size() != 0))
      error(where + ", output '" + name + "': must be a " + (scalar ? "float scalar" : "float tensor") +
            ", is " + planTypeStr(t));
  }

  void checkConventions(const plan::Program &prog) {
    if (isForwardProgram(prog.name())) {
      // A model's outputs: "logits", or the names of the several values it returns.
      if (prog.outputs_size() == 0) error("program '" + prog.name() + "' has no output");
      for (const plan::Output &o : prog.outputs()) {
        if (o.name().empty() || o.name().rfind(kGradPrefix, 0) == 0 || o.name().rfind(kMetricPrefix, 0) == 0)
          error("program '" + prog.name() + "' has an output named '" + o.name() +
                "' (a forward program's outputs are named after the model's results)");
        requireOutput(prog, o.name(), false);
      }
      return;
    }
    if (prog.name() == "encode") {  // it writes its states and returns nothing else
      if (prog.outputs_size() != 0) error("program 'encode' has outputs; it only writes the encoder's states");
      return;
    }
    if (isInference(prog.name())) {
      requireOutput(prog, "logits", false);
      return;
    }
    requireOutput(prog, "loss", true);
    std::string where = "program '" + prog.name() + "'";
    for (const plan::Output &o : prog.outputs()) {
      if (o.name().rfind(kMetricPrefix, 0) == 0) {
        // Metrics: named float scalars the evaluation reports (docs/language.md, `metric`).
        if (prog.name() != "eval") error(where + " has a metric output '" + o.name() + "' (only eval reports metrics)");
        if (o.name().size() == std::string(kMetricPrefix).size()) error(where + " has a metric output with no name");
        requireOutput(prog, o.name(), true);
        continue;
      }
      if (o.name().rfind(kGradPrefix, 0) != 0) continue;
      std::string p = o.name().substr(std::string(kGradPrefix).size());
      if (prog.name() != "train_step") error(where + " has a gradient output '" + o.name() + "'");
      const plan::Buffer &b = prog.buffers(o.buffer());
      if (!params_.count(p)) error(where + ", output '" + o.name() + "': no parameter named '" + p + "'");
      if (params_.at(p)->frozen())
        error(where + ", output '" + o.name() + "': parameter '" + p + "' is frozen and has no gradient");
      if (b.kind() != plan::Buffer::GRAD || b.name() != p)
        error(where + ", output '" + o.name() + "': must be the GRAD buffer of '" + p + "', is buffer " +
              std::to_string(o.buffer()) + " (" + bufferKindName(b.kind()) + " '" + b.name() + "')");
    }
    if (prog.name() == "train_step") {
      // A set of the names, not findOutput per parameter: that scan was
      // quadratic in the parameters (1000 layers: 16,000 of them).
      std::set<std::string> outputs;
      for (const plan::Output &o : prog.outputs()) outputs.insert(o.name());
      for (const plan::Param &p : plan_.params())
        if (!p.frozen() && !outputs.count(kGradPrefix + p.name()))
          error(where + " has no output 'grad:" + p.name() + "' (every parameter needs its gradient)");
    }
  }

  /* prefill reads tokens i32[1, W] (W: the window, the states' second dim) and
     decode i32[1, 1]; both an i32[] offset whose bound (Input.vocab) admits
     exactly the offsets at which their tokens fit the window, W - T + 1. With
     an encode program (an encoder-decoder model) encode reads ids i32[1, T]
     and a float attention_mask [1, T] and writes the encoder's states
     ([1, T, dim]); prefill and decode read that attention_mask too. */
  void checkInferenceInputs(const plan::Program &prog) {
    std::string where = "program '" + prog.name() + "'";
    const plan::Program *encode = findProgram("encode");
    const plan::Input *encoderMask = encode ? findInput(*encode, "attention_mask") : nullptr;
    if (prog.name() == "encode") {
      const plan::Input *ids = findInput(prog, "ids");
      if (prog.inputs_size() != 2 || !ids || !encoderMask)
        error(where + " must read exactly the inputs 'ids' and 'attention_mask'");
      const plan::TensorType &it = ids->type(), &mt = encoderMask->type();
      if (it.dtype() != plan::I32 || it.shape_size() != 2 || it.shape(0) != 1 || it.shape(1) < 1)
        error(where + ", input 'ids': is " + planTypeStr(it) + ", expected i32[1, T]");
      if (mt.dtype() == plan::I32 || mt.shape_size() != 2 || mt.shape(0) != 1 || mt.shape(1) != it.shape(1))
        error(where + ", input 'attention_mask': is " + planTypeStr(mt) + ", expected a float [1, " +
              std::to_string(it.shape(1)) + "] (the ids' shape)");
      for (const plan::Buffer &b : prog.buffers())
        if (b.kind() == plan::Buffer::STATE && (b.type().shape_size() != 3 || b.type().shape(1) != it.shape(1)))
          error(where + " writes state '" + b.name() + "' of " + planTypeStr(b.type()) + ", expected [1, " +
                std::to_string(it.shape(1)) + ", dim] (the encoder's positions)");
      return;
    }
    const plan::Input *tokens = nullptr, *offset = nullptr;
    for (const plan::Input &in : prog.inputs()) {
      if (in.name() == "tokens") tokens = &in;
      else if (in.name() == "offset") offset = &in;
      else if (in.name() == "attention_mask" && encoderMask) {
        if (planTypeStr(in.type()) != planTypeStr(encoderMask->type()))
          error(where + ", input 'attention_mask': is " + planTypeStr(in.type()) + ", the encode program's " +
                planTypeStr(encoderMask->type()));
      } else
        error(where + " reads input '" + in.name() + "'; it reads only 'tokens' and 'offset'" +
              (encoderMask ? " and the encoder's 'attention_mask'" : ""));
    }
    if (!tokens || !offset) error(where + " must read the inputs 'tokens' and 'offset'");
    const plan::TensorType &tt = tokens->type();
    if (tt.dtype() != plan::I32 || tt.shape_size() != 2 || tt.shape(0) != 1 || tt.shape(1) < 1 ||
        (prog.name() == "decode" && tt.shape(1) != 1))
      error(where + ", input 'tokens': is " + planTypeStr(tt) + ", expected i32[1, " +
            (prog.name() == "decode" ? "1" : "window") + "]");
    if (offset->type().dtype() != plan::I32 || offset->type().shape_size() != 0)
      error(where + ", input 'offset': is " + planTypeStr(offset->type()) + ", expected i32[] (a scalar)");
    const int64_t window = inferenceWindow();
    const int64_t bound = window - tt.shape(1) + 1;
    if (offset->vocab() != bound)
      error(where + ", input 'offset': its bound is " + std::to_string(offset->vocab()) + ", expected " +
            std::to_string(bound) + " (offsets 0 to window " + std::to_string(window) + " - " +
            std::to_string(tt.shape(1)) + " tokens)");
    // The encoder's states (those encode writes) hold its positions, checked there.
    std::set<std::string> encoderStates;
    if (encode)
      for (const plan::Buffer &b : encode->buffers())
        if (b.kind() == plan::Buffer::STATE) encoderStates.insert(b.name());
    for (const plan::State &st : plan_.states())
      if (!encoderStates.count(st.name()) && st.type().shape(1) != window)
        error("state '" + st.name() + "' is " + planTypeStr(st.type()) + ", expected a window of " +
              std::to_string(window) + " positions (the prefill program's tokens)");
  }

  const plan::Program *findProgram(const std::string &name) const {
    for (const plan::Program &p : plan_.programs())
      if (p.name() == name) return &p;
    return nullptr;
  }
  static const plan::Input *findInput(const plan::Program &prog, const std::string &name) {
    for (const plan::Input &in : prog.inputs())
      if (in.name() == name) return &in;
    return nullptr;
  }

  /* The window of the inference programs: the tokens prefill reads, i32[1, W]. */
  int64_t inferenceWindow() {
    for (const plan::Program &p : plan_.programs())
      if (p.name() == "prefill")
        for (const plan::Input &in : p.inputs())
          if (in.name() == "tokens" && in.type().shape_size() == 2 && in.type().shape(1) >= 1)
            return in.type().shape(1);
    error("program 'prefill' must read the input 'tokens' i32[1, window] (its window)");
  }

  // --- training and data configuration (bounds below, shared with lmc) -------

  void checkTrain() {
    if (std::optional<Violation> v = checkTrainConfig(plan_.train())) error("train config: " + v->str());
    checkLossScale();
  }

  /* fp16 plans: train_step reads the loss scale (f32[]) and the train config has
     the scaler's settings; other plans have neither. */
  void checkLossScale() {
    const bool fp16 = plan_.precision() == "fp16";
    if (fp16 != plan_.train().has_loss_scale())
      error(fp16 ? "precision fp16 needs the train config's loss_scale (the dynamic loss scaler's settings)"
                 : "train config: loss_scale is fp16's, but the plan's precision is " +
                       (plan_.precision().empty() ? std::string("fp32") : plan_.precision()));
    for (const plan::Program &prog : plan_.programs()) {
      bool reads = false;
      for (const plan::Input &in : prog.inputs()) {
        if (!isLossScale(in)) continue;
        reads = true;
        const std::string where = "program '" + prog.name() + "' input '" + kLossScaleInput + "' ";
        if (prog.name() != "train_step") error(where + "is train_step's alone (the backward's seed)");
        if (in.type().dtype() != plan::F32 || in.type().shape_size() != 0)
          error(where + "is " + planTypeStr(in.type()) + ", expected f32[] (a scalar)");
        if (!fp16) error(where + "belongs to fp16 plans (loss scaling); this plan's precision is " +
                         (plan_.precision().empty() ? std::string("fp32") : plan_.precision()));
      }
      if (fp16 && prog.name() == "train_step" && !reads)
        error("program 'train_step' of a precision fp16 plan must read the input '" + std::string(kLossScaleInput) +
              "' (its backward's seed)");
    }
  }

  void checkData() {
    const plan::DataConfig &d = plan_.data();
    // A plan whose objective is not fed by a data pipeline (an op-level gradient
    // check, say) has none: it can be inspected and gradchecked, and `lmrt run`
    // refuses it with its own message.
    if (!hasDataConfig(d)) return;
    if (std::optional<Violation> v = checkDataConfig(d)) error("data config: " + v->str());
    if (d.transform() != "causal") {
      // Other transforms feed train_step and eval each of the named inputs
      // they read; the forward program (sampling) is causal-only and unchecked.
      for (const plan::Program &prog : plan_.programs()) {
        if (isForwardProgram(prog.name()) || isInference(prog.name())) continue;
        std::string where = "data config (" + d.transform() + "): program '" + prog.name() + "' ";
        if (dataInputs(prog).empty()) error(where + "reads no input");
        for (const plan::Input &in : prog.inputs()) {
          std::string want = expectedPipelineInput(in, d);
          if (!want.empty())
            error(where + "input '" + in.name() + "' is " + planTypeStr(in.type()) + ", expected " + want);
        }
      }
      return;
    }
    // The causal pipeline feeds each of train_step and eval one window of seq + 1
    // token ids per row; forward (sampling) takes the ids themselves.
    for (const plan::Program &prog : plan_.programs()) {
      std::string where = "data config (causal): program '" + prog.name() + "' ";
      if (isInference(prog.name())) {  // tokens [1, T <= seq] and the offset (checkInference)
        for (const plan::Input &in : prog.inputs())
          if (in.name() == "tokens" && (in.type().shape_size() != 2 || in.type().shape(1) > d.seq() ||
                                        !tokenVocabFits(in, d)))
            error(where + "input 'tokens' is " + planTypeStr(in.type()) + " accepting ids below " +
                  std::to_string(in.vocab()) + "; expected i32[1, T <= " + std::to_string(d.seq()) +
                  "] accepting the data vocab " + std::to_string(d.vocab()));
        continue;
      }
      // A forward program of other inputs (a mask, several models) is not sampled from.
      std::vector<const plan::Input *> data = dataInputs(prog);
      if (isForwardProgram(prog.name()) && prog.inputs_size() != 1) continue;
      if (data.size() != 1)
        error(where + "must read exactly one token input, it declares " + std::to_string(data.size()));
      const plan::Input &in = *data[0];
      for (const plan::Input &key : prog.inputs())
        if (isDropoutKey(key) && !expectedDropoutKey(key, in.type().shape(0)).empty())
          error(where + "input 'dropout_key' is " + planTypeStr(key.type()) + ", expected " +
                expectedDropoutKey(key, in.type().shape(0)));
      std::string want = expectedTokenInput(prog.name(), in.type(), d);
      if (!want.empty())
        error(where + "input '" + in.name() + "' is " + planTypeStr(in.type()) + ", expected " + want);
      if (!tokenVocabFits(in, d))
        error(where + "input '" + in.name() + "' accepts ids below " + std::to_string(in.vocab()) +
              " but the data vocab is " + std::to_string(d.vocab()));
    }
  }
};

}  // namespace

std::string checkPlan(const plan::Plan &plan, const StepCheck &stepCheck) {
  try {
    Validator(plan, stepCheck).run();
  } catch (const Broken &broken) {
    return broken.message;
  }
  return "";
}

}  // namespace contract
}  // namespace lmrt

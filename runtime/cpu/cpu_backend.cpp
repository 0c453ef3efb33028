/* Implements: the CPU backend (cpu_backend.h). */
#include "runtime/cpu/cpu_backend.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "base/env.h"
#include "contract/contract.h"
#include "contract/plan_types.h"
#include "runtime/cpu/collectives_in_flight.h"
#include "runtime/cpu/optimizers.h"
#include "runtime/cpu/grad_clip.h"
#include "runtime/cpu/kernel_library.h"
#include "runtime/cpu/kernels/registry.h"
#include "runtime/cpu/zero_shards.h"
#include "runtime/comm/communicator.h"
#include "runtime/exec/backend_registry.h"
#include "runtime/exec/held_state.h"
#include "runtime/exec/optimizer.h"
#include "runtime/exec/session.h"

namespace lmrt::cpu {
namespace {

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};

/* Whether two steps' work is within a factor of two: a matmul pair's two threads
   then wait less than the pair saves (one whole GEMM a thread instead of half of each). */
bool likeWork(int64_t a, int64_t b) { return a > 0 && b > 0 && a <= 2 * b && b <= 2 * a; }

/* A step of a program, resolved to the code that runs it. */
struct ExecStep {
  const StepBinding *binding;
  const kernels::KernelDef *def;        // a library kernel, or
  const kernels::GeneratedKernel *gen;  // a generated one ("fused" steps)
  bool matmul = false;                  // the library's lm.matmul (a matmul pair's candidate)
};

struct ExecProgram {
  const ProgramBinding *binding = nullptr;
  std::vector<std::vector<double>> constants;  // per buffer: aligned copy of CONSTANT data
  std::vector<ExecStep> steps;
};

class CpuBackend final : public Backend, public HeldOptimizerState {
public:
  CpuBackend(Session &session);
  std::string describe() const override { return "cpu"; }
  std::string describeSharding() const override { return zero_ ? zero_->describe() : zero3_.describe; }
  void uploadParams() override { copiesCurrent_ = false; }
  void downloadParams(bool) override {}
  void run(const std::string &program, const std::map<std::string, TensorRef> &inputs) override;
  TensorRef output(const std::string &program, const std::string &name) override;
  void accumulateGradients(int micro, int count) override;
  double gradientNorm() override {
    if (!tensorSplit_.empty()) return tensorParallelGradNorm();
    if (!zero3_.whole.empty()) return zeroGradNorm(zero3_.whole, zero3Slices(), zero3_.rank, zero3_.ranks);
    return zero_ && zero_->stage() >= 2 ? zero_->gradNorm() : globalGradNorm(views_);
  }
  void optimizerStep(double lr, double gradScale) override;
  int64_t optimizerUpdates() const override { return optimizer_ ? optimizer_->stepCount() : 0; }
  std::vector<NamedTensor> optimizerState() override;
  std::vector<NamedTensor> beginRestore(int64_t updates) override;
  std::vector<HeldTensor> heldOptimizerState() override;  // HeldOptimizerState
  std::vector<HeldTensor> beginHeldRestore(int64_t updates) override;
  void finishRestore() override;
  void setProfile(OpProfile *profile) override { profile_ = profile; }
  void setNonFiniteCheck(NonFiniteValue *check) override { nonFinite_ = check; }
  void setStepObserver(StepObserver observer) override { observer_ = std::move(observer); }

private:
  const ExecProgram &program(const std::string &name) const;
  /* Made on first use: a plan run only forward (eval, sample) needs no optimizer. */
  CpuOptimizer &optimizer() {
    if (!optimizer_) optimizer_ = makeCpuOptimizer(optimizerConfig(session_.plan()));
    return *optimizer_;
  }
  std::vector<NamedTensor> stateTensors(std::vector<void *> data);
  void findParamCopies();
  double tensorParallelGradNorm();
  /* ZeRO stage 3: the local gradients, which are the slices. */
  std::vector<const void *> zero3Slices() const {
    std::vector<const void *> slices;
    for (const ParamView &v : views_) slices.push_back(v.grad);
    return slices;
  }

  Session &session_;
  const BoundPlan &bound_;
  std::unique_ptr<KernelLibrary> generated_;
  std::unique_ptr<char, FreeDeleter> arena_;
  std::map<std::string, ExecProgram> programs_;
  // Plan.states (the prefill/decode caches): allocated, zeroed, by the first run
  // of a program that uses them (training never does), then kept between runs;
  // doubles, so f64 states are aligned.
  std::vector<std::vector<double>> states_;
  std::string lastRun_;  // outputs in the arena belong to this program's last run
  std::vector<ParamView> views_;
  std::unique_ptr<CpuOptimizer> optimizer_;
  // ZeRO stages 1 and 2 (zero_shards.h): this rank's slices, and the parameter each state
  // tensor of the checkpoint layout belongs to. Null without ZeRO.
  std::unique_ptr<ZeroShards> zero_;
  std::vector<size_t> stateOwner_;
  // ZeRO stage 3: every parameter of the plan is this rank's padded slice of the
  // flattened tensor (on a data x tensor mesh, of its tensor-parallel block), which the
  // optimizer updates as it is; the whole parameters' (blocks') types are for the
  // gradient norm. Empty otherwise.
  struct {
    std::vector<ParamView> whole;
    int rank = 0, ranks = 1;
    std::string describe;
  } zero3_;
  // Tensor parallelism: per parameter, whether this rank holds a slice of it (plan
  // Param.sharding). Empty without a tensor axis.
  std::vector<bool> tensorSplit_;
  std::vector<HostBytes> accumulated_;  // the micro-batches' summed gradients (--accumulate)
  // Mixed precision: the train step's kept parameter copies (contract.h's keptParamCopies).
  // copyStep_ marks their cast steps, skipped while copiesCurrent_: the copies hold the
  // parameters' rounding (the last run was the train step, which made or kept them, and
  // since then the parameters changed only through AdamW, which wrote them too, via
  // copyViews_: views_ with each copy's place). Empty when the plan has none, or the
  // optimizer or ZeRO updates the parameters otherwise, or LMRT_PARAM_COPIES=0.
  std::vector<bool> copyStep_;
  std::vector<ParamView> copyViews_;
  bool copiesCurrent_ = false;
  OpProfile *profile_ = nullptr;
  NonFiniteValue *nonFinite_ = nullptr;
  StepObserver observer_;
};

CpuBackend::CpuBackend(Session &session)
    : session_(session), bound_(session.bound()) {
  // The generated kernels first: a plan this CPU cannot run fails before any
  // memory is allocated for it.
  generated_ = KernelLibrary::load(bound_.plan(), bound_.origin());
  for (const plan::Program &prog : bound_.plan().programs()) {
    ExecProgram &ep = programs_[prog.name()];
    ep.binding = &bound_.program(prog.name());
    ep.constants.resize(ep.binding->buffers.size());
    for (size_t i = 0; i < ep.binding->buffers.size(); ++i) {
      const BufferBinding &b = ep.binding->buffers[i];
      if (b.kind != plan::Buffer::CONSTANT) continue;
      // Protobuf bytes have no alignment guarantee; kernels read f64 from here.
      ep.constants[i].resize((b.constant->size() + 7) / 8);
      if (!b.constant->empty()) std::memcpy(ep.constants[i].data(), b.constant->data(), b.constant->size());
    }
    for (const StepBinding &sb : ep.binding->steps) {
      const kernels::GeneratedKernel *gen = sb.kernel >= 0 ? &generated_->kernel(sb.kernel) : nullptr;
      ep.steps.push_back({&sb, gen ? nullptr : kernels::findKernel(sb.step->op()), gen, !gen && sb.step->op() == "matmul"});
    }
  }
  states_.resize(bound_.states().size());
  // One arena for all programs: they never run at the same time. Zeroed so that a
  // (validated-away) read of unwritten memory would at least be deterministic.
  size_t bytes = (size_t)((bound_.arenaBytes() + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment);
  if (bytes == 0) bytes = kArenaAlignment;
  arena_.reset(static_cast<char *>(allocHost(bytes, kArenaAlignment)));
  if (!arena_) bound_.error("cannot allocate an arena of " + std::to_string(bytes) + " bytes");
  std::memset(arena_.get(), 0, bytes);
  for (ParamState &p : session.params())
    views_.push_back({p.type.dtype, p.value.data(), p.grad.data(), p.type.numel(), p.weightDecay, p.frozen,
                      p.lrScale, p.trustRatio, p.type.shape});
  // ZeRO when the plan asks for it and this process is one of its data ranks
  // (joinRanks refuses a run whose processes differ from the mesh; a lone process
  // evaluating or sampling the plan has nothing to split).
  const plan::Mesh &mesh = bound_.plan().train().mesh();
  comm::Communicator &world = comm::world();
  if (mesh.tensor() > 1) {
    const std::string e = tensorParallelOptimizerError(optimizerConfig(bound_.plan()), mesh.tensor());
    if (!e.empty()) bound_.error(e);
    for (const plan::Param &p : bound_.plan().params()) tensorSplit_.push_back(p.has_sharding());
  }
  if (mesh.zero() >= 3 && mesh.data() > 1) {
    // The plan's parameters are slices (-lm-zero-shard-params): the optimizer updates
    // them as they are (padding past a tensor's end holds zeros no program reads), and
    // checkpoints and weights files gather them (runtime/train/tensor_parallel.h).
    const OptimizerConfig config = optimizerConfig(bound_.plan());
    if (!updatesSlices(config))
      bound_.error("ZeRO needs an elementwise optimizer (adamw, sgd or lion), and the plan's is " + config.kind);
    // On a data x tensor mesh each rank's slices are of its tensor-parallel blocks (the
    // plan's parameter types), its data rank world rank / tensor.
    const int64_t tensor = std::max<int64_t>(1, mesh.tensor());
    const bool ranked = world.size() == mesh.data() * tensor;
    zero3_.rank = ranked ? world.rank() / (int)tensor : 0;
    zero3_.ranks = (int)mesh.data();
    int64_t mine = 0, all = 0;
    for (size_t i = 0; i < views_.size(); ++i) {
      const TensorType block = toTensorType(bound_.plan().params((int)i).type());
      ParamView whole = views_[i];
      whole.shape = block.shape;
      whole.numel = block.numel();
      whole.grad = nullptr;  // stage 3 never reads a whole gradient
      zero3_.whole.push_back(whole);
      all += whole.numel;
      mine += zeroShard(whole.numel, mesh.data(), zero3_.rank).size();
    }
    if (ranked) zero3_.describe = describeZero(3, zero3_.rank, mine, all);
  } else if (const int64_t tensor = std::max<int64_t>(1, mesh.tensor());
             mesh.zero() >= 1 && mesh.data() > 1 && world.size() == mesh.data() * tensor) {
    const OptimizerConfig config = optimizerConfig(bound_.plan());
    if (!updatesSlices(config))
      bound_.error("ZeRO needs an elementwise optimizer (adamw, sgd or lion), and the plan's is " + config.kind);
    // Over the data axis (its group: comm::meshGroup(0)); on a data x tensor mesh (stages 1
    // and 2) of the rank's tensor-parallel slices, the data rank being world rank / tensor.
    zero_ = std::make_unique<ZeroShards>(views_, world.rank() / (int)tensor, (int)mesh.data(), (int)mesh.zero());
    for (size_t i = 0; i < views_.size(); ++i)
      for (size_t k = 0; k < stateSlots(config, views_[i].shape).size(); ++k) stateOwner_.push_back(i);
  }
  findParamCopies();
}

/* Whether the optimizer writes the kept parameter copies and the train step skips their
   casts: LMRT_PARAM_COPIES, on unless it is 0 (the same bits either way; off, for
   A/B timings and the byte-identity test). */
bool paramCopiesOn() {
  static const bool on = envSwitch("LMRT_PARAM_COPIES", /*byDefault=*/true);
  return on;
}

void CpuBackend::findParamCopies() {
  auto it = programs_.find("train_step");
  if (it == programs_.end() || !paramCopiesOn() || zero_ || !zero3_.whole.empty() ||
      optimizerConfig(bound_.plan()).kind != "adamw")
    return;
  const ProgramBinding &pb = *it->second.binding;
  std::vector<ParamView> views = views_;
  std::vector<bool> marked(pb.steps.size(), false);
  bool any = false;
  for (int si : keptParamCopies(*pb.program)) {
    const StepBinding &sb = pb.steps[(size_t)si];
    const BufferBinding &from = pb.buffers[(size_t)sb.in[0]], &to = pb.buffers[(size_t)sb.out[0]];
    ParamView &v = views[(size_t)from.param];
    if (v.copy || v.dtype != DType::F32 || to.type.numel() != v.numel) continue;  // one copy a parameter
    v.copy = arena_.get() + to.offset;
    v.copyType = to.type.dtype;
    marked[(size_t)si] = any = true;
  }
  if (!any) return;
  copyStep_ = std::move(marked);
  copyViews_ = std::move(views);
}

/* The norm one process computes, to rounding (docs/distributed.md, "Tensor parallelism"):
   each gradient's sum of squares (gradSumSquares), summed over the tensor group where the
   rank holds a slice of it (comm::sumOverTensorGroup). Under ZeRO stage 2 each local
   gradient's sum is put together from its data-axis slices, the same bits. */
double CpuBackend::tensorParallelGradNorm() {
  std::vector<double> sums;
  if (!zero3_.whole.empty())
    sums = zeroGradSumSquares(zero3_.whole, zero3Slices(), zero3_.rank, zero3_.ranks);
  else if (zero_ && zero_->stage() >= 2)
    sums = zero_->gradSumSquares();
  else
    for (const ParamView &v : views_) sums.push_back(gradSumSquares(v.grad, v.dtype, v.numel));
  return std::sqrt(comm::sumOverTensorGroup(sums, tensorSplit_));
}

void CpuBackend::optimizerStep(double lr, double gradScale) {
  // The copies live in the arena: written only while it holds the train step's buffers
  // (another program's outputs may be read yet).
  if (!copyViews_.empty() && lastRun_ == "train_step" && optimizer().writesCopies())
    return optimizer().step(copyViews_, lr, gradScale);  // copiesCurrent_ stays as it is
  copiesCurrent_ = false;
  if (!zero_) return optimizer().step(views_, lr, gradScale);
  zero_->release();  // the last checkpoint's gathered state
  optimizer().step(zero_->views(), lr, gradScale);
  zero_->gatherParams(views_);
}

/* Whether a collective step starts and the next steps go on while it is under way
   (collectives_in_flight.h): LMRT_OVERLAP_COLLECTIVES, on unless it is 0
   (docs/distributed.md, "Buckets and overlap"); off, a bucket runs to its end where the
   executor reaches it. */
bool overlapCollectives() {
  static const bool on = envSwitch("LMRT_OVERLAP_COLLECTIVES", /*byDefault=*/true);
  return on;
}

/* The collectives, which overlap the next steps (collectives_in_flight.h). */
bool isCollective(const std::string &op) {
  return op == "all_reduce" || op == "reduce_scatter" || op == "all_gather";
}

const ExecProgram &CpuBackend::program(const std::string &name) const {
  auto it = programs_.find(name);
  if (it == programs_.end()) bound_.program(name);  // throws, listing the programs
  return it->second;
}

void CpuBackend::run(const std::string &programName, const std::map<std::string, TensorRef> &inputs) {
  const ExecProgram &ep = program(programName);
  const ProgramBinding &pb = *ep.binding;
  bound_.checkInputs(programName, inputs);

  lastRun_.clear();  // a failed run leaves no valid outputs
  // Kept parameter copies that are current skip their casts (not under a step observer,
  // which is shown every step, nor the non-finite check, which blames a parameter at
  // its first reader).
  const bool trainStep = programName == "train_step" && !copyStep_.empty();
  const bool skipCopies = trainStep && copiesCurrent_ && !observer_ && !nonFinite_;
  copiesCurrent_ = false;  // until this run ends: another program's run takes the arena
  for (const BufferBinding &b : pb.buffers)
    if (b.state >= 0 && states_[b.state].empty())
      states_[b.state].assign((size_t)(b.type.bytes() + 7) / 8, 0.0);
  std::vector<ParamState> &params = session_.params();
  auto ref = [&](int id) -> TensorRef {
    const BufferBinding &b = pb.buffers[id];
    switch (b.kind) {
    case plan::Buffer::ARENA: return TensorRef{arena_.get() + b.offset, b.type};
    case plan::Buffer::PARAM: return TensorRef{params[b.param].value.data(), b.type};
    case plan::Buffer::GRAD: return TensorRef{params[b.param].grad.data(), b.type};
    case plan::Buffer::INPUT: return TensorRef{inputs.at(b.name).data, b.type};
    case plan::Buffer::CONSTANT: return TensorRef{const_cast<double *>(ep.constants[id].data()), b.type};
    case plan::Buffer::STATE: return TensorRef{states_[b.state].data(), b.type};
    default: bound_.error("buffer " + std::to_string(id) + " has an unknown kind");
    }
  };
  // Collective steps go on while the next steps run (collectives_in_flight.h); not while
  // a step observer or the non-finite check reads every output as it is made.
  CollectivesInFlight inFlight(comm::world());
  const bool buckets = !observer_ && !nonFinite_, overlap = buckets && overlapCollectives();
  auto callOf = [&](const StepBinding &sb) {
    kernels::KernelCall call{{}, {}, sb.attrs};
    for (int id : sb.in) call.in.push_back(ref(id));
    for (int id : sb.out) call.out.push_back(ref(id));
    return call;
  };
  for (size_t si = 0; si < ep.steps.size(); ++si) {
    const ExecStep &st = ep.steps[si];
    const StepBinding &sb = *st.binding;
    if (skipCopies && copyStep_[si]) continue;
    auto t0 = std::chrono::steady_clock::now();
    kernels::KernelCall call = callOf(sb);
    inFlight.progress();  // between every two steps: one MPI_Test of the one under way
    inFlight.before(call.in, call.out);
    if (buckets && !st.gen && isCollective(sb.step->op())) {
      // A bucket: this step and the all_reduce (or reduce_scatter) steps right after it that
      // it can go with (-lm-data-parallel places a bucket's all-reduces together,
      // -lm-zero-shard-params its reduce-scatters), one collective.
      std::vector<kernels::KernelCall> bucket{call};
      std::vector<TensorRef> reads = call.in, writes = call.out;
      std::string where = sb.where;
      const std::string op = sb.step->op();
      while ((op == "all_reduce" || op == "reduce_scatter") && si + 1 < ep.steps.size()) {
        const ExecStep &next = ep.steps[si + 1];
        if (next.gen || !(op == "all_reduce" ? joinsAllReduceBucket : joinsReduceScatterBucket)(
                            *ep.binding->program, *sb.step, *next.binding->step))
          break;
        // Not when it reads what the bucket writes, or writes what the bucket touches (its
        // own input in place excepted): one collective could not order them.
        kernels::KernelCall nc = callOf(*next.binding);
        if (anyOverlap(nc.in, writes) || anyOverlap(nc.out, writes) ||
            (nc.out[0].data != nc.in[0].data && anyOverlap(nc.out, reads)))
          break;
        inFlight.before(nc.in, nc.out);
        reads.insert(reads.end(), nc.in.begin(), nc.in.end());
        writes.insert(writes.end(), nc.out.begin(), nc.out.end());
        bucket.push_back(nc);
        ++si;
      }
      if (bucket.size() > 1)
        where += " to step " + std::to_string(si) + " (a bucket of " + std::to_string(bucket.size()) + " " + op + " steps)";
      const kernels::KernelDef *def = st.def;
      std::string origin = bound_.origin();
      const bool allReduce = op == "all_reduce";
      auto work = [bucket, def, where, origin, allReduce] {
        try {
          if (bucket.size() > 1 && allReduce)
            kernels::runAllReduceBucket(bucket);
          else if (bucket.size() > 1)
            kernels::runReduceScatterBucket(bucket);
          else
            def->run(bucket[0]);
        } catch (const std::exception &e) {
          throw Error("plan '" + origin + "': " + where + ": " + e.what());
        }
      };
      if (overlap)
        inFlight.start(work, reads, writes);
      else
        work();
      if (profile_) {
        OpProfile::Entry &e = profile_->ops[profileKey(bound_.plan(), programName, sb)];
        e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        e.calls += (int64_t)bucket.size();
        e.flops += sb.step->flops();
      }
      continue;
    }
    auto report = [&](const std::string &tensor, int64_t element, double value) {
      *nonFinite_ = NonFiniteValue{true, sb.where, programName, (int64_t)si, sb.step->op(), sb.step->loc(),
                                   tensor, element, value};
    };
    if (nonFinite_) {  // a parameter that is already non-finite is the cause, not this op
      for (size_t k = 0; k < sb.in.size(); ++k) {
        const BufferBinding &b = pb.buffers[sb.in[k]];
        double v;
        int64_t at;
        if (b.kind == plan::Buffer::PARAM && (at = firstNonFinite(call.in[k], v)) >= 0)
          return report("parameter '" + b.name + "' " + call.in[k].type.str(), at, v);
      }
    }
    // Two matmuls in a row, independent of each other and of like work (a linear layer's
    // input and weight gradients): at once, one a thread (kernels::runMatmulPair).
    if (st.matmul && si + 1 < ep.steps.size() && ep.steps[si + 1].matmul && !observer_ && !nonFinite_ &&
        !(skipCopies && copyStep_[si + 1]) && likeWork(sb.step->flops(), ep.steps[si + 1].binding->step->flops())) {
      const StepBinding &nb = *ep.steps[si + 1].binding;
      kernels::KernelCall nc = callOf(nb);
      if (!anyOverlap(nc.in, call.out) && !anyOverlap(nc.out, call.out) && !anyOverlap(nc.out, call.in)) {
        inFlight.before(nc.in, nc.out);
        int failed = -1;
        bool paired = false;
        try {
          paired = kernels::runMatmulPair(call, nc, failed);
        } catch (const std::exception &e) {
          throw Error("plan '" + bound_.origin() + "': " + (failed == 1 ? nb : sb).where + ": " + e.what());
        }
        if (paired) {
          if (profile_) {
            const std::string second = profileKey(bound_.plan(), programName, nb);
            OpProfile::Entry &e =
                profile_->ops[profileKey(bound_.plan(), programName, sb) + " & " + second.substr(programName.size() + 1)];
            e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            e.calls += 2;
            e.flops += sb.step->flops() + nb.step->flops();
          }
          ++si;
          continue;
        }
      }
    }
    try {
      if (st.gen) {
        std::vector<TensorRef> args(call.in);
        args.insert(args.end(), call.out.begin(), call.out.end());
        kernels::runGenerated(*st.gen, args);
      } else {
        st.def->run(call);
      }
    } catch (const std::exception &e) {
      throw Error("plan '" + bound_.origin() + "': " + sb.where + ": " + e.what());
    }
    if (profile_) {
      OpProfile::Entry &e = profile_->ops[profileKey(bound_.plan(), programName, sb)];
      e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      e.calls += 1;
      e.flops += sb.step->flops();
    }
    if (observer_) observer_(programName, *sb.step, call.in, call.out);
    if (nonFinite_)
      for (size_t k = 0; k < call.out.size(); ++k) {
        double v;
        int64_t at = firstNonFinite(call.out[k], v);
        if (at >= 0) return report("output " + std::to_string(k) + " " + call.out[k].type.str(), at, v);
      }
  }
  // The outputs are read after the run: every collective has finished.
  inFlight.waitAll();
  if (profile_ && inFlight.waitedSeconds() > 0) {
    OpProfile::Entry &e = profile_->ops[programName + "/wait(collectives)"];
    e.seconds += inFlight.waitedSeconds();
    e.calls += 1;
  }
  lastRun_ = programName;
  copiesCurrent_ = trainStep;
}

TensorRef CpuBackend::output(const std::string &programName, const std::string &name) {
  const ExecProgram &ep = program(programName);
  const int id = bound_.outputBuffer(programName, name);
  const BufferBinding &b = ep.binding->buffers[id];
  // Gradients live in parameter-owned storage and survive other programs' runs;
  // arena outputs are only valid until any program runs again.
  if (b.kind == plan::Buffer::GRAD) return TensorRef{session_.params()[b.param].grad.data(), b.type};
  if (lastRun_ != programName)
    bound_.error("output '" + name + "' of program '" + programName +
                 "' is valid only right after a successful run of that program (last successful run: " +
                 (lastRun_.empty() ? std::string("none") : "'" + lastRun_ + "'") + ")");
  switch (b.kind) {
  case plan::Buffer::ARENA: return TensorRef{arena_.get() + b.offset, b.type};
  case plan::Buffer::PARAM: return TensorRef{session_.params()[b.param].value.data(), b.type};
  case plan::Buffer::CONSTANT: return TensorRef{const_cast<double *>(ep.constants[id].data()), b.type};
  default: bound_.error("output '" + name + "' of program '" + programName + "' is an INPUT buffer");
  }
}

/* Every micro-batch's gradients summed into `acc`, then their mean left in the
   gradient buffers (where the norm, clipping and AdamW read them). */
template <typename T> void accumulateInto(T *acc, T *grad, int64_t n, int micro, int k) {
  if (micro == 0) {
    std::copy(grad, grad + n, acc);
  } else if (micro < k - 1) {
    for (int64_t i = 0; i < n; ++i) acc[i] += grad[i];
  } else {
    const T div = T(k);
    for (int64_t i = 0; i < n; ++i) grad[i] = (acc[i] + grad[i]) / div;
  }
}

void CpuBackend::accumulateGradients(int micro, int count) {
  if (accumulated_.empty())
    for (const ParamState &p : session_.params()) accumulated_.emplace_back(p.grad.size());
  for (size_t i = 0; i < views_.size(); ++i) {
    const ParamView &v = views_[i];
    // The gradient buffer's elements: from ZeRO stage 2 on the rank's reduced slice.
    const int64_t n = session_.params()[i].gradType.numel();
    if (v.dtype == DType::F32)
      accumulateInto((float *)accumulated_[i].data(), (float *)v.grad, n, micro, count);
    else
      accumulateInto((double *)accumulated_[i].data(), (double *)v.grad, n, micro, count);
  }
}

/* The optimizer's state under the checkpoint's names: each parameter's slots
   (stateSlots) in plan order, "adamw.m.<param>", "adamw.v.<param>", ... */
std::vector<NamedTensor> CpuBackend::stateTensors(std::vector<void *> data) {
  const OptimizerConfig config = optimizerConfig(session_.plan());
  const std::vector<ParamState> &params = session_.params();
  std::vector<NamedTensor> out;
  for (const ParamState &p : params)
    for (const StateSlot &slot : stateSlots(config, p.type.shape)) {
      if (out.size() >= data.size()) fail("the optimizer holds %zu state tensors, fewer than its layout", data.size());
      out.emplace_back(slot.prefix + "." + p.name, TensorRef{data[out.size()], TensorType{p.type.dtype, slot.shape}});
    }
  if (out.size() != data.size())
    fail("the optimizer holds %zu state tensors, its layout %zu", data.size(), out.size());
  return out;
}

/* Under ZeRO the logical tensors, gathered from every rank's slices (collective). */
std::vector<NamedTensor> CpuBackend::optimizerState() {
  if (!zero_) return stateTensors(optimizer().state(views_));
  return stateTensors(zero_->gatherState(optimizer().state(zero_->views()), stateOwner_));
}

/* This rank's slices under ZeRO as they are (no gather); otherwise the whole tensors. */
std::vector<HeldTensor> CpuBackend::heldOptimizerState() {
  std::vector<HeldTensor> out;
  if (!zero_) {
    for (const NamedTensor &t : optimizerState())
      out.push_back({t.first, t.second.type, 0, t.second.type.numel(), t.second.data});
    return out;
  }
  std::vector<void *> slices = optimizer().state(zero_->views());
  std::vector<NamedTensor> whole = stateTensors(std::vector<void *>(slices.size(), nullptr));
  for (size_t k = 0; k < whole.size(); ++k) {
    const ShardRange r = zero_->range(stateOwner_[k]);
    out.push_back({whole[k].first, whole[k].second.type, r.begin, r.end, slices[k]});
  }
  return out;
}

std::vector<NamedTensor> CpuBackend::beginRestore(int64_t updates) {
  if (!zero_) {
    optimizer().restoreState(views_, updates);
    return stateTensors(optimizer().state(views_));
  }
  optimizer().restoreState(zero_->views(), updates);
  return stateTensors(zero_->wholeState(stateOwner_));
}

/* Under ZeRO stages 1 and 2: this rank's slices, which a sharded checkpoint fills
   without the whole tensors beginRestore's scatter needs. */
std::vector<HeldTensor> CpuBackend::beginHeldRestore(int64_t updates) {
  // On a tensor-parallel mesh a slice is a flat run of the rank's block, not of the
  // logical tensor the shards hold: restored whole (beginRestore) and scattered.
  if (!zero_ || !tensorSplit_.empty()) return {};
  optimizer().restoreState(zero_->views(), updates);
  return heldOptimizerState();
}

void CpuBackend::finishRestore() {
  if (zero_) zero_->scatterState(optimizer().state(zero_->views()), stateOwner_);
}

// --- registration -------------------------------------------------------------------

/* Plan validation's kernel check: the step's types and attributes against its CPU
   kernel's check() (the contract has matched the step against the op table, and the
   kernel table agrees with it: kernels::compareWithOpTable, unit-tested). */
std::string kernelCheck(const plan::Step &step, const std::vector<plan::TensorType> &in,
                        const std::vector<plan::TensorType> &out) {
  const kernels::KernelDef *def = kernels::findKernel(step.op());
  if (!def) return "no kernel for op '" + step.op() + "'";
  std::vector<TensorType> inTypes, outTypes;
  for (const plan::TensorType &t : in) inTypes.push_back(toTensorType(t));
  for (const plan::TensorType &t : out) outTypes.push_back(toTensorType(t));
  try {
    return def->check(inTypes, outTypes, decodeAttrs(step));
  } catch (const Error &e) {  // attribute getters throw on an attribute of another kind
    return e.what();
  }
}

void probe(const DeviceOptions &options) {
  if (options.index > 0) fail("--device cpu has one device (index 0), not %d", options.index);
}

std::vector<std::string> listDevices() { return {"cpu"}; }

const BackendProvider kProvider = {"cpu", probe, createBackend, listDevices};

/* At program start: everything that links the CPU backend can open sessions. */
struct Registrar {
  Registrar() {
    registerBackend(kProvider);
    registerStepCheck(kernelCheck);
  }
} registrar;

}  // namespace

std::unique_ptr<Backend> createBackend(Session &session, const DeviceOptions &) {
  return std::make_unique<CpuBackend>(session);
}

}  // namespace lmrt::cpu

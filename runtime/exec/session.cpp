/* Implements: Session (session.h): loading and validating a plan, owning the
   parameter/gradient storage and one 64-byte aligned arena shared by all
   programs, and running a program step by step through the kernel table. */
#include "runtime/exec/session.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/cpu/kernels/registry.h"
#include "runtime/exec/init.h"
#include "runtime/cpu/kernel_library.h"
#include "contract/plan_file.h"
#include "contract/plan_types.h"
#include "runtime/exec/validate.h"
#include "contract/contract.h"
#include "contract/op_table.h"

namespace lmrt {

TensorRef ParamState::valueRef() { return TensorRef{value.data(), type}; }
TensorRef ParamState::gradRef() { return TensorRef{grad.data(), type}; }

// --- the executable form of a program ------------------------------------------

namespace {

struct ExecStep {
  const kernels::KernelDef *def;           // a library kernel, or
  const kernels::GeneratedKernel *gen;     // a generated one ("fused" steps)
  kernels::Attrs attrs;
  std::vector<int> in, out;
  std::string where;  // "program 'train_step', step 17 (matmul, from gpt_tiny.lm:12:5)"
};

struct ExecProgram {
  const plan::Program *prog = nullptr;
  std::vector<TensorType> types;      // per buffer
  std::vector<int> param;             // per buffer: index into params_ (PARAM/GRAD), else -1
  std::vector<int> state;             // per buffer: index into Impl::states (STATE), else -1
  std::vector<std::vector<double>> constants;  // per buffer: aligned copy of CONSTANT data
  std::vector<ExecStep> steps;
};

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};

}  // namespace

struct Session::Impl {
  std::string origin;
  std::unique_ptr<char, FreeDeleter> arena;
  int64_t arenaBytes = 0;
  std::map<std::string, ExecProgram> programs;
  std::map<std::string, size_t> paramIndex;
  // Plan.states (the prefill/decode caches): allocated, zeroed, by the first run
  // of a program that uses them (training never does), then kept between runs;
  // doubles, so f64 states are aligned.
  std::vector<std::vector<double>> states;
  std::vector<size_t> stateWords;
  std::map<std::string, int> stateIndex;
  std::string lastRun;  // outputs in the arena belong to this program's last run
  std::unique_ptr<KernelLibrary> generated;

  [[noreturn]] void error(const std::string &msg) const {
    throw Error("plan '" + origin + "': " + msg);
  }
  const ExecProgram &program(const std::string &name) const {
    auto it = programs.find(name);
    if (it == programs.end()) {
      std::string have;
      for (const auto &[n, p] : programs) have += (have.empty() ? "" : ", ") + n;
      error("no program '" + name + "' (the plan has: " + have + ")");
    }
    return it->second;
  }
};

Session::Session(plan::Plan plan) : plan_(std::move(plan)), impl_(std::make_shared<Impl>()) {}

std::unique_ptr<Session> Session::load(const std::string &planPath, bool cpuKernels) {
  return fromPlan(readPlanFile(planPath), planPath, cpuKernels);
}

std::unique_ptr<Session> Session::fromPlan(plan::Plan plan, const std::string &origin, bool cpuKernels) {
  validatePlan(plan, origin);
  std::unique_ptr<Session> s(new Session(std::move(plan)));
  Impl &impl = *s->impl_;
  impl.origin = origin;
  // The generated kernels first: a plan this CPU cannot run fails before any
  // memory is allocated for it.
  if (cpuKernels) impl.generated = KernelLibrary::load(s->plan_, origin);

  for (const plan::Param &p : s->plan_.params()) {
    ParamState st;
    st.name = p.name();
    st.type = toTensorType(p.type());
    st.weightDecay = p.weight_decay();
    st.frozen = p.frozen();
    st.value.assign((size_t)st.type.bytes(), 0);
    st.grad.assign((size_t)st.type.bytes(), 0);
    impl.paramIndex[p.name()] = s->params_.size();
    s->params_.push_back(std::move(st));
  }

  for (const plan::State &st : s->plan_.states()) {
    impl.stateIndex[st.name()] = (int)impl.states.size();
    impl.states.emplace_back();
    impl.stateWords.push_back((size_t)(typeBytes(st.type()) + 7) / 8);
  }

  for (const plan::Program &prog : s->plan_.programs()) {
    ExecProgram &ep = impl.programs[prog.name()];
    ep.prog = &prog;
    impl.arenaBytes = std::max(impl.arenaBytes, prog.arena_bytes());
    int n = prog.buffers_size();
    ep.types.resize(n);
    ep.param.assign(n, -1);
    ep.state.assign(n, -1);
    ep.constants.resize(n);
    for (int i = 0; i < n; ++i) {
      const plan::Buffer &b = prog.buffers(i);
      ep.types[i] = toTensorType(b.type());
      if (b.kind() == plan::Buffer::PARAM || b.kind() == plan::Buffer::GRAD)
        ep.param[i] = (int)impl.paramIndex.at(b.name());
      if (b.kind() == plan::Buffer::STATE) ep.state[i] = impl.stateIndex.at(b.name());
      if (b.kind() == plan::Buffer::CONSTANT) {
        // Protobuf bytes have no alignment guarantee; kernels read f64 from here.
        ep.constants[i].resize((b.data().size() + 7) / 8);
        if (!b.data().empty()) std::memcpy(ep.constants[i].data(), b.data().data(), b.data().size());
      }
    }
    for (int si = 0; si < prog.steps_size(); ++si) {
      const plan::Step &st = prog.steps(si);
      const kernels::GeneratedKernel *gen = nullptr;
      if (st.op() == ops::kFusedOpName && impl.generated)
        gen = &impl.generated->kernel((int)st.attrs().at("kernel").i());
      ExecStep es{gen ? nullptr : kernels::findKernel(st.op()), gen, decodeAttrs(st),
                  std::vector<int>(st.inputs().begin(), st.inputs().end()),
                  std::vector<int>(st.outputs().begin(), st.outputs().end()),
                  "program '" + prog.name() + "', step " + std::to_string(si) + " (" + st.op() +
                      (st.loc().empty() ? "" : ", from " + st.loc()) + ")"};
      ep.steps.push_back(std::move(es));
    }
  }
  // One arena for all programs: they never run at the same time. Zeroed so that a
  // (validated-away) read of unwritten memory would at least be deterministic.
  size_t bytes = (size_t)((impl.arenaBytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment);
  if (bytes == 0) bytes = kArenaAlignment;
  impl.arena.reset(static_cast<char *>(allocHost(bytes, kArenaAlignment)));
  if (!impl.arena) impl.error("cannot allocate an arena of " + std::to_string(bytes) + " bytes");
  std::memset(impl.arena.get(), 0, bytes);
  return s;
}

ParamState &Session::param(const std::string &name) {
  auto it = impl_->paramIndex.find(name);
  if (it == impl_->paramIndex.end()) impl_->error("no parameter named '" + name + "'");
  return params_[it->second];
}

bool Session::hasProgram(const std::string &name) const { return impl_->programs.count(name) != 0; }

const plan::Input &Session::input(const std::string &name) const {
  for (const plan::Input &in : plan_.inputs())
    if (in.name() == name) return in;
  impl_->error("no input named '" + name + "'");
}

void Session::initParams(uint64_t seed) {
  for (size_t i = 0; i < params_.size(); ++i) {
    fillInit(params_[i].valueRef(), plan_.params((int)i).init(), seed, params_[i].name);
    std::fill(params_[i].grad.begin(), params_[i].grad.end(), 0);
  }
}

namespace {

/* Token ids are checked once at the program boundary, so bad data is reported
   against the input and position rather than deep inside a kernel. */
void checkIds(const std::string &where, const plan::Input &decl, const TensorRef &t) {
  const int32_t *ids = t.as<int32_t>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    if (ids[i] >= 0 && ids[i] < decl.vocab()) continue;
    if (decl.has_ignore_index() && ids[i] == decl.ignore_index()) continue;  // labels: no loss here
    if (t.shape().empty())  // a bounded scalar: the decode programs' position offset
      fail("%s, input '%s': %d is outside [0, %lld)", where.c_str(), decl.name().c_str(), ids[i],
           (long long)decl.vocab());
    Shape pos(t.shape().size());
    int64_t rest = i;
    for (size_t d = pos.size(); d-- > 0;) {
      pos[d] = rest % t.shape()[d];
      rest /= t.shape()[d];
    }
    fail("%s, input '%s': id %d at %s is outside the vocabulary [0, %lld)", where.c_str(),
         decl.name().c_str(), ids[i], shapeStr(pos).c_str(), (long long)decl.vocab());
  }
}

}  // namespace

void Session::run(const std::string &program, const std::map<std::string, TensorRef> &inputs) {
  Impl &impl = *impl_;
  const ExecProgram &ep = impl.program(program);
  const plan::Program &prog = *ep.prog;
  std::string where = "plan '" + impl.origin + "': program '" + program + "'";

  std::map<std::string, const TensorRef *> bound;
  for (const plan::Input &decl : prog.inputs()) {
    auto it = inputs.find(decl.name());
    if (it == inputs.end()) fail("%s: input '%s' is missing", where.c_str(), decl.name().c_str());
    const TensorRef &t = it->second;
    TensorType want = toTensorType(decl.type());
    if (t.type.dtype != want.dtype || t.type.shape != want.shape)
      fail("%s, input '%s': expected %s, got %s", where.c_str(), decl.name().c_str(),
           want.str().c_str(), t.type.str().c_str());
    if (!t.data && want.numel() > 0)
      fail("%s, input '%s': null data", where.c_str(), decl.name().c_str());
    if (decl.vocab() > 0) checkIds(where, decl, t);
    bound[decl.name()] = &t;
  }
  for (const auto &[name, t] : inputs)
    if (!bound.count(name)) {
      std::string have;
      for (const plan::Input &d : prog.inputs()) have += (have.empty() ? "" : ", ") + d.name();
      fail("%s reads no input '%s' (it reads: %s)", where.c_str(), name.c_str(), have.c_str());
    }

  impl.lastRun.clear();  // a failed run leaves no valid outputs
  for (int id = 0; id < prog.buffers_size(); ++id)
    if (ep.state[id] >= 0 && impl.states[ep.state[id]].empty())
      impl.states[ep.state[id]].assign(impl.stateWords[ep.state[id]], 0.0);
  auto ref = [&](int id) -> TensorRef {
    const plan::Buffer &b = prog.buffers(id);
    const TensorType &type = ep.types[id];
    switch (b.kind()) {
    case plan::Buffer::ARENA: return TensorRef{impl.arena.get() + b.offset(), type};
    case plan::Buffer::PARAM: return TensorRef{params_[ep.param[id]].value.data(), type};
    case plan::Buffer::GRAD: return TensorRef{params_[ep.param[id]].grad.data(), type};
    case plan::Buffer::INPUT: return TensorRef{bound.at(b.name())->data, type};
    case plan::Buffer::CONSTANT:
      return TensorRef{const_cast<double *>(ep.constants[id].data()), type};
    case plan::Buffer::STATE: return TensorRef{impl.states[ep.state[id]].data(), type};
    default: impl.error("buffer " + std::to_string(id) + " has an unknown kind");
    }
  };
  // The index of the first non-finite element of a float tensor, or -1.
  auto firstNonFinite = [](const TensorRef &t, double &value) -> int64_t {
    int64_t n = t.numel();
    if (t.type.dtype == DType::F32) {
      const float *p = t.as<float>();
      for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i])) return value = p[i], i;
    } else if (t.type.dtype == DType::F64) {
      const double *p = t.as<double>();
      for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i])) return value = p[i], i;
    }
    return -1;
  };
  for (size_t si = 0; si < ep.steps.size(); ++si) {
    const ExecStep &st = ep.steps[si];
    auto t0 = std::chrono::steady_clock::now();
    kernels::KernelCall call{{}, {}, st.attrs};
    for (int id : st.in) call.in.push_back(ref(id));
    for (int id : st.out) call.out.push_back(ref(id));
    auto report = [&](const std::string &tensor, int64_t element, double value) {
      const plan::Step &ps = prog.steps((int)si);
      *nonFinite_ = NonFiniteValue{true, st.where, program, (int64_t)si, ps.op(), ps.loc(), tensor, element, value};
    };
    if (nonFinite_) {  // a parameter that is already non-finite is the cause, not this op
      for (size_t k = 0; k < st.in.size(); ++k) {
        const plan::Buffer &b = prog.buffers(st.in[k]);
        double v;
        int64_t at;
        if (b.kind() == plan::Buffer::PARAM && (at = firstNonFinite(call.in[k], v)) >= 0)
          return report("parameter '" + b.name() + "' " + call.in[k].type.str(), at, v);
      }
    }
    try {
      if (!st.gen && !st.def) impl.error(st.where + ": the session was loaded without its CPU kernels");
      if (st.gen) {
        std::vector<TensorRef> args(call.in);
        args.insert(args.end(), call.out.begin(), call.out.end());
        kernels::runGenerated(*st.gen, args);
      } else {
        st.def->run(call);
      }
    } catch (const Error &e) {
      throw Error("plan '" + impl.origin + "': " + st.where + ": " + e.what());
    } catch (const std::exception &e) {
      throw Error("plan '" + impl.origin + "': " + st.where + ": " + e.what());
    }
    if (profile_) {
      // Matmuls are keyed by their transposes: weight gradients (lhs^T) have their own speed;
      // generated kernels by their schedule (a GEMM with an epilogue, elementwise, reduce).
      std::string key = program + "/" + (st.gen ? std::string("fused:") + kernels::scheduleName(st.gen->schedule)
                                                : std::string(st.def->op));
      if (st.def && std::strcmp(st.def->op, "matmul") == 0) {
        if (st.attrs.getBool("transpose_lhs", false)) key += "(lhs^T)";
        if (st.attrs.getBool("transpose_rhs", false)) key += "(rhs^T)";
      }
      OpProfile::Entry &e = profile_->ops[key];
      e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      e.calls += 1;
      e.flops += prog.steps((int)si).flops();
    }
    if (observer_) observer_(program, prog.steps((int)si), call.in, call.out);
    if (nonFinite_)
      for (size_t k = 0; k < call.out.size(); ++k) {
        double v;
        int64_t at = firstNonFinite(call.out[k], v);
        if (at >= 0) return report("output " + std::to_string(k) + " " + call.out[k].type.str(), at, v);
      }
  }
  impl.lastRun = program;
}

TensorRef Session::output(const std::string &program, const std::string &name) {
  Impl &impl = *impl_;
  const ExecProgram &ep = impl.program(program);
  for (const plan::Output &o : ep.prog->outputs()) {
    if (o.name() != name) continue;
    const plan::Buffer &b = ep.prog->buffers(o.buffer());
    // Gradients live in parameter-owned storage and survive other programs' runs;
    // arena outputs are only valid until any program runs again.
    if (b.kind() == plan::Buffer::GRAD)
      return TensorRef{params_[ep.param[o.buffer()]].grad.data(), ep.types[o.buffer()]};
    if (impl.lastRun != program)
      impl.error("output '" + name + "' of program '" + program +
                 "' is valid only right after a successful run of that program (last successful "
                 "run: " + (impl.lastRun.empty() ? std::string("none") : "'" + impl.lastRun + "'") + ")");
    if (b.kind() == plan::Buffer::ARENA)
      return TensorRef{impl.arena.get() + b.offset(), ep.types[o.buffer()]};
    if (b.kind() == plan::Buffer::PARAM)
      return TensorRef{params_[ep.param[o.buffer()]].value.data(), ep.types[o.buffer()]};
    if (b.kind() == plan::Buffer::CONSTANT)
      return TensorRef{const_cast<double *>(ep.constants[o.buffer()].data()), ep.types[o.buffer()]};
    impl.error("output '" + name + "' of program '" + program + "' is an INPUT buffer");
  }
  impl.error("program '" + program + "' has no output '" + name + "'");
}

}  // namespace lmrt

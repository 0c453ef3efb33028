/* Implements: BoundPlan (bound_plan.h). */
#include "runtime/exec/bound_plan.h"

#include <cmath>

#include "contract/contract.h"
#include "contract/op_table.h"
#include "contract/plan_trust.h"
#include "contract/plan_types.h"
#include "contract/scalar_math.h"
#include "runtime/exec/validate.h"

namespace lmrt {

namespace {
std::vector<std::string> &trustedKeys() {
  static std::vector<std::string> keys;
  return keys;
}
}  // namespace

void setTrustedPlanKeys(std::vector<std::string> keys) { trustedKeys() = std::move(keys); }

BoundPlan::BoundPlan(plan::Plan p, std::string origin) : plan_(std::move(p)), origin_(std::move(origin)) {
  if (!trustedKeys().empty()) {
    std::string why = untrustedReason(plan_, trustedKeys());
    if (!why.empty())
      error("refusing to run it: " + why + "; this lmrt runs only plans signed by its trusted keys (--trust-key, "
            "$LMRT_TRUSTED_KEYS; docs/plan-format.md, \"Trust\")");
  }
  validatePlan(plan_, origin_);
  for (int i = 0; i < plan_.params_size(); ++i) paramIndex_[plan_.params(i).name()] = i;
  std::map<std::string, int> stateIndex;
  for (const plan::State &st : plan_.states()) {
    stateIndex[st.name()] = (int)states_.size();
    states_.push_back({st.name(), toTensorType(st.type())});
  }
  for (const plan::Program &prog : plan_.programs()) {
    ProgramBinding &pb = programs_[prog.name()];
    pb.program = &prog;
    arenaBytes_ = std::max(arenaBytes_, prog.arena_bytes());
    for (const plan::Buffer &b : prog.buffers()) {
      BufferBinding bb;
      bb.kind = b.kind();
      bb.type = toTensorType(b.type());
      bb.name = b.name();
      if (b.kind() == plan::Buffer::ARENA) bb.offset = b.offset();
      if (b.kind() == plan::Buffer::PARAM || b.kind() == plan::Buffer::GRAD) bb.param = paramIndex_.at(b.name());
      if (b.kind() == plan::Buffer::STATE) bb.state = stateIndex.at(b.name());
      if (b.kind() == plan::Buffer::CONSTANT) bb.constant = &b.data();
      pb.buffers.push_back(std::move(bb));
    }
    for (int si = 0; si < prog.steps_size(); ++si) {
      const plan::Step &st = prog.steps(si);
      StepBinding sb;
      sb.step = &st;
      if (st.op() == ops::kFusedOpName) sb.kernel = (int)st.attrs().at("kernel").i();
      sb.attrs = decodeAttrs(st);
      sb.in.assign(st.inputs().begin(), st.inputs().end());
      sb.out.assign(st.outputs().begin(), st.outputs().end());
      sb.where = "program '" + prog.name() + "', step " + std::to_string(si) + " (" + st.op() +
                 (st.loc().empty() ? "" : ", from " + st.loc()) + ")";
      pb.steps.push_back(std::move(sb));
    }
  }
}

void BoundPlan::error(const std::string &msg) const { throw Error("plan '" + origin_ + "': " + msg); }

const ProgramBinding &BoundPlan::program(const std::string &name) const {
  auto it = programs_.find(name);
  if (it == programs_.end()) {
    std::string have;
    for (const auto &[n, p] : programs_) have += (have.empty() ? "" : ", ") + n;
    error("no program '" + name + "' (the plan has: " + have + ")");
  }
  return it->second;
}

int BoundPlan::paramIndex(const std::string &name) const {
  auto it = paramIndex_.find(name);
  return it == paramIndex_.end() ? -1 : it->second;
}

int BoundPlan::outputBuffer(const std::string &programName, const std::string &name) const {
  for (const plan::Output &o : program(programName).program->outputs())
    if (o.name() == name) return o.buffer();
  error("program '" + programName + "' has no output '" + name + "'");
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

void BoundPlan::checkInputs(const std::string &programName, const std::map<std::string, TensorRef> &inputs) const {
  const plan::Program &prog = *program(programName).program;
  std::string where = "plan '" + origin_ + "': program '" + programName + "'";
  size_t matched = 0;
  for (const plan::Input &decl : prog.inputs()) {
    auto it = inputs.find(decl.name());
    if (it == inputs.end()) fail("%s: input '%s' is missing", where.c_str(), decl.name().c_str());
    const TensorRef &t = it->second;
    TensorType want = toTensorType(decl.type());
    if (t.type.dtype != want.dtype || t.type.shape != want.shape)
      fail("%s, input '%s': expected %s, got %s", where.c_str(), decl.name().c_str(), want.str().c_str(),
           t.type.str().c_str());
    if (!t.data && want.numel() > 0) fail("%s, input '%s': null data", where.c_str(), decl.name().c_str());
    if (decl.vocab() > 0) checkIds(where, decl, t);
    ++matched;
  }
  if (matched == inputs.size()) return;
  for (const auto &[name, t] : inputs) {
    bool read = false;
    for (const plan::Input &d : prog.inputs()) read = read || d.name() == name;
    if (read) continue;
    std::string have;
    for (const plan::Input &d : prog.inputs()) have += (have.empty() ? "" : ", ") + d.name();
    fail("%s reads no input '%s' (it reads: %s)", where.c_str(), name.c_str(), have.c_str());
  }
}

int64_t firstNonFinite(const TensorRef &t, double &value) {
  int64_t n = t.numel();
  auto scan = [&](auto read) -> int64_t {
    for (int64_t i = 0; i < n; ++i)
      if (double v = read(i); !std::isfinite(v)) return value = v, i;
    return -1;
  };
  switch (t.type.dtype) {
  case DType::F32: return scan([p = t.as<float>()](int64_t i) { return (double)p[i]; });
  case DType::F64: return scan([p = t.as<double>()](int64_t i) { return p[i]; });
  // Mixed-precision plans store activations in bf16/f16: a NaN there is as
  // much the step's first non-finite value as one in an f32 buffer.
  case DType::BF16: return scan([p = t.as<lmc::bf16>()](int64_t i) { return (double)lmc::toFloat(p[i]); });
  case DType::F16: return scan([p = t.as<lmc::f16>()](int64_t i) { return (double)lmc::toFloat(p[i]); });
  default: return -1;
  }
}

std::string profileKey(const plan::Plan &plan, const std::string &program, const StepBinding &step) {
  if (step.kernel >= 0) {
    const char *schedule = "?";
    switch (plan.kernels(step.kernel).schedule()) {
    case plan::Kernel::ELEMENTWISE: schedule = "elementwise"; break;
    case plan::Kernel::COLUMN_REDUCE: schedule = "column_reduce"; break;
    case plan::Kernel::MATMUL_EPILOGUE: schedule = "matmul_epilogue"; break;
    default: break;
    }
    return program + "/fused:" + schedule;
  }
  std::string key = program + "/" + step.step->op();
  if (step.step->op() == "matmul") {
    if (step.attrs.getBool("transpose_lhs")) key += "(lhs^T)";
    if (step.attrs.getBool("transpose_rhs")) key += "(rhs^T)";
  }
  return key;
}

}  // namespace lmrt

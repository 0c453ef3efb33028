/* Implements: plan binding, done once per session and shared by every backend: a
   validated plan with each program's buffers resolved to what they name (an arena
   offset, a parameter, its gradient, a decode cache, an input, constant bytes),
   each step's attributes decoded (ODS defaults filled in) and described for error
   messages, and the checks a program's inputs get at its boundary. A backend only
   maps these bindings to its own memory. */
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/tensor.h"
#include "contract/attrs.h"
#include "contract/plan.pb.h"

namespace lmrt {

struct BufferBinding {
  plan::Buffer::Kind kind = plan::Buffer::ARENA;
  TensorType type;
  int64_t offset = 0;  // ARENA: bytes into the arena
  int param = -1;      // PARAM, GRAD: index into the plan's parameters
  int state = -1;      // STATE: index into BoundPlan::states()
  std::string name;    // the buffer's name (PARAM, GRAD, INPUT, STATE)
  const std::string *constant = nullptr;  // CONSTANT: its bytes in the plan
};

struct StepBinding {
  const plan::Step *step = nullptr;
  int kernel = -1;  // a "fused" step: the index of its generated kernel (Plan.kernels); else -1
  kernels::Attrs attrs;
  std::vector<int> in, out;  // buffer ids
  std::string where;         // "program 'train_step', step 17 (matmul, from gpt_tiny.lm:12:5)"
};

struct ProgramBinding {
  const plan::Program *program = nullptr;
  std::vector<BufferBinding> buffers;
  std::vector<StepBinding> steps;
};

struct StateBinding {
  std::string name;
  TensorType type;
};

class BoundPlan {
public:
  /* Validates `plan` (plan contract plus the registered kernel checks: validate.h)
     and resolves every program. Throws Error naming the plan (`origin`) and where. */
  BoundPlan(plan::Plan plan, std::string origin);
  BoundPlan(const BoundPlan &) = delete;
  BoundPlan &operator=(const BoundPlan &) = delete;

  const plan::Plan &plan() const { return plan_; }
  const std::string &origin() const { return origin_; }
  /* The largest arena of any program: the programs share one (they never run at once). */
  int64_t arenaBytes() const { return arenaBytes_; }
  const std::vector<StateBinding> &states() const { return states_; }

  bool hasProgram(const std::string &name) const { return programs_.count(name) != 0; }
  /* Throws, listing the plan's programs, when there is none of that name. */
  const ProgramBinding &program(const std::string &name) const;
  /* The parameter's index in plan order, or -1. */
  int paramIndex(const std::string &name) const;
  /* The buffer id of a program's output; throws naming the program and output. */
  int outputBuffer(const std::string &program, const std::string &output) const;

  /* Checks the inputs of one run of `program`: every input it reads given, with
     exactly its declared type and non-null data, ids inside their vocabulary
     bound, nothing it does not read. Throws naming the input. */
  void checkInputs(const std::string &program, const std::map<std::string, TensorRef> &inputs) const;

  [[noreturn]] void error(const std::string &msg) const;

private:
  plan::Plan plan_;
  std::string origin_;
  int64_t arenaBytes_ = 0;
  std::vector<StateBinding> states_;
  std::map<std::string, ProgramBinding> programs_;
  std::map<std::string, int> paramIndex_;
};

/* The site's trusted plan signers (raw Ed25519 public keys, contract/plan_trust.h):
   while set, a BoundPlan is made only of a plan signed by one of them, before any
   of its native code is loaded. Empty (the default): every valid plan runs. */
void setTrustedPlanKeys(std::vector<std::string> keys);

// --- shared by the backends' diagnostics -----------------------------------------

/* The index of the first non-finite element of a float tensor (f32, f64, bf16, f16) on the host, or -1
   (`value` then holds it). Integer tensors have none. */
int64_t firstNonFinite(const TensorRef &t, double &value);

/* The --profile key of a step: matmuls by their transposes ("train_step/matmul(lhs^T)":
   weight gradients have a speed of their own), generated kernels by their schedule
   ("train_step/fused:matmul_epilogue"). */
std::string profileKey(const plan::Plan &plan, const std::string &program, const StepBinding &step);

}  // namespace lmrt

/* Implements: the table of CPU kernels the executor dispatches plan steps to.
   One entry per lm dialect op (name without "lm."), each with a shape/attribute
   check (used when a plan is validated) and a run function (f32 and f64). */
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/lmrt/tensor.h"

namespace lmrt::kernels {

/* Step attributes, decoded from the plan. Names match the MLIR op attributes. */
class Attrs {
public:
  using Value = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
  void set(const std::string &name, Value v) { values_[name] = std::move(v); }
  bool has(const std::string &name) const { return values_.count(name) != 0; }
  /* Getters throw lmrt::Error naming the attribute when it is missing or of another kind. */
  int64_t getInt(const std::string &name) const;
  double getFloat(const std::string &name) const;  // accepts an int too
  bool getBool(const std::string &name) const;
  const std::string &getString(const std::string &name) const;
  const std::vector<int64_t> &getInts(const std::string &name) const;
  /* The same, but `def` when the attribute is absent (docs/dialect.md defaults). */
  int64_t getInt(const std::string &name, int64_t def) const { return has(name) ? getInt(name) : def; }
  double getFloat(const std::string &name, double def) const { return has(name) ? getFloat(name) : def; }
  bool getBool(const std::string &name, bool def) const { return has(name) ? getBool(name) : def; }
  /* Raw constant bytes travel as a string. */
  const std::string &getData(const std::string &name) const { return getString(name); }

private:
  std::map<std::string, Value> values_;
};

struct KernelCall {
  std::vector<TensorRef> in;
  std::vector<TensorRef> out;
  const Attrs &attrs;
};

struct KernelDef {
  const char *op;
  int numInputs;
  int numOutputs;
  /* Returns "" when the operand/result types and attributes are valid for this op,
     else a message saying what is wrong ("matmul: lhs f32[2, 3] and rhs f32[4, 5]
     disagree on the contracted dimension (3 vs 4)"). */
  std::string (*check)(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                       const Attrs &attrs);
  /* Runs the kernel; every output is fully overwritten (no accumulation).
     May throw lmrt::Error on bad data (e.g. a token id outside the vocabulary). */
  void (*run)(const KernelCall &call);
};

/* "" when `kernels` and the plan's op table (runtime/plan/op_table.h, generated
   from the ODS) agree: one kernel per listed op with the op's operand and result
   counts, and no kernel that is not listed (or listed twice). Else every
   disagreement, one per line. The unit tests run it on allKernels(). */
std::string compareWithOpTable(const std::vector<KernelDef> &kernels);

/* nullptr when no kernel has that name. */
const KernelDef *findKernel(std::string_view op);
/* All kernels, for listing and tests. */
const std::vector<KernelDef> &allKernels();

}  // namespace lmrt::kernels

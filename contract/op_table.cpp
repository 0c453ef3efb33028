/* Implements: the op table of op_table.h, from the lm-tblgen output of LMOps.td. */
#include "contract/op_table.h"

namespace lmrt::ops {
namespace {
// Defines kGeneratedOps (and its attribute arrays) in terms of the types above.
#include "contract/op_table.inc"
}  // namespace

const char *attrKindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int: return "an integer";
  case AttrKind::Float: return "a float";
  case AttrKind::Bool: return "a bool";
  case AttrKind::IntList: return "an integer list";
  }
  return "an unknown kind";
}

const AttrInfo *OpInfo::findAttr(std::string_view attr) const {
  for (int i = 0; i < numAttrs; ++i)
    if (attr == attrs[i].name) return &attrs[i];
  return nullptr;
}

const std::vector<OpInfo> &allOps() {
  static const std::vector<OpInfo> table = [] {
    std::vector<OpInfo> ops(std::begin(kGeneratedOps), std::end(kGeneratedOps));
    ops.push_back({kCopyOpName, 1, 1, nullptr, 0});
    return ops;
  }();
  return table;
}

const OpInfo *findOp(std::string_view name) {
  for (const OpInfo &op : allOps())
    if (name == op.name) return &op;
  return nullptr;
}

std::string compareKernelTable(const std::vector<KernelEntry> &kernels, const std::string &kind) {
  const std::string kernel = kind.empty() ? "kernel" : kind + " kernel";
  std::string problems;
  auto report = [&](const std::string &line) { problems += line + "\n"; };
  for (const OpInfo &op : allOps()) {
    int found = 0;
    for (const KernelEntry &k : kernels) {
      if (op.name != std::string_view(k.op)) continue;
      ++found;
      if (k.numInputs >= 0 && (k.numInputs != op.numInputs || k.numOutputs != op.numOutputs))
        report(kernel + " '" + k.op + "' takes " + std::to_string(k.numInputs) + " inputs and " +
               std::to_string(k.numOutputs) + " outputs, the op takes " + std::to_string(op.numInputs) + " and " +
               std::to_string(op.numOutputs));
    }
    if (found == 0) report(std::string("op '") + op.name + "' has no " + kernel);
    if (found > 1) report(std::string("op '") + op.name + "' has " + std::to_string(found) + " " + kernel + "s");
  }
  for (const KernelEntry &k : kernels)
    if (!findOp(k.op)) report(kernel + " '" + k.op + "' is not an op of the plan's op table");
  return problems;
}

}  // namespace lmrt::ops

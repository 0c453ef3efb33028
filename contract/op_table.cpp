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

}  // namespace lmrt::ops

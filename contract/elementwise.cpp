/* Implements: the elementwise table of elementwise.h, from the lm-tblgen output of LMOps.td. */
#include "contract/elementwise.h"

namespace lmrt::elementwise {
namespace {
// Defines kGeneratedElementwiseOps (and its name arrays) in terms of ElementwiseOp.
#define GET_ELEMENTWISE_ROWS
#include "contract/elementwise_table.inc"
}  // namespace

const std::vector<ElementwiseOp> &allOps() {
  static const std::vector<ElementwiseOp> table(std::begin(kGeneratedElementwiseOps),
                                                std::end(kGeneratedElementwiseOps));
  return table;
}

const ElementwiseOp *findOp(std::string_view name) {
  for (const ElementwiseOp &op : allOps())
    if (name == op.name) return &op;
  return nullptr;
}

const ElementwiseOp *findBuiltin(std::string_view builtin) {
  for (const ElementwiseOp &op : allOps())
    if (op.builtin && builtin == op.builtin) return &op;
  return nullptr;
}

}  // namespace lmrt::elementwise

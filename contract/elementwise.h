/* Implements: the elementwise table: every lm op with a scalar form
   (ElementwiseOpInterface), generated from the ODS (dialect/IR/LMOps.td) by
   tools/lm-tblgen -gen-lm-elementwise-table, with its arity, operand names,
   shape rule, scalar form and, for the ops the .lm language calls by name, the
   builtin's name and argument names. The frontend's builtins read it here; the
   CPU and CUDA kernels are instantiated from the same rows as functors
   (elementwise_forms.h). So a new elementwise op is its ODS definition and VJP,
   plus a scalar_math.h function when its math is new (docs/adding-an-op.md).
   Plain C++ with no dependency. */
#pragma once
#include <string_view>
#include <vector>

namespace lmrt::elementwise {

struct ElementwiseOp {
  const char *name;  // the op name without "lm." ("log_sigmoid"), = Step.op
  int arity;         // operands; an elementwise op has one result and no attributes
  /* The operands broadcast into the result (NumPy rules: shapes::broadcast for
     two, shapes::where for three); else every operand has the result's shape. */
  bool broadcasts;
  /* One point of the result as C++ over the operands $0, $1, ... of the
     accumulation type A and contract/scalar_math.h ("lmc::logSigmoid($0)"), as in
     the ODS; the kernel emitter writes it into generated kernels. */
  const char *scalarForm;
  const char *const *operands;  // arity ODS operand names ("lhs", "rhs"), for messages
  const char *builtin;               // the .lm builtin that emits the op, nullptr when none
  const char *const *builtinParams;  // arity argument names of that builtin (nullptr when none)
};

/* Every elementwise op, sorted by name. */
const std::vector<ElementwiseOp> &allOps();
/* nullptr when no elementwise op has that name. */
const ElementwiseOp *findOp(std::string_view name);
/* The op a .lm builtin of that name emits; nullptr when the table has none
   (the language's other builtins, gelu among them, are the frontend's own). */
const ElementwiseOp *findBuiltin(std::string_view builtin);

}  // namespace lmrt::elementwise

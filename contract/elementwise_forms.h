/* Implements: the scalar form of every op of the elementwise table
   (elementwise.h) as a functor, generated from the ODS by lm-tblgen: forms::Tanh
   has the op's name, arity, shape rule and operand names as constants and
   `f<A>(x0)` = lmc::tanh(x0), callable on the host and on CUDA devices.
   forms::All lists every functor, so a kernel template instantiated over it gives
   each elementwise op a CPU or CUDA kernel computing exactly its scalar form,
   which generated kernels (the fused plans) compute too. */
#pragma once
#include "contract/scalar_math.h"

namespace lmrt::elementwise::forms {

/* A list of functors (forms::All). */
template <typename... Forms> struct List {};

#define GET_ELEMENTWISE_FORMS
#include "contract/elementwise_table.inc"

}  // namespace lmrt::elementwise::forms

/* Implements: the one fact about ZeRO stage 3's parameter slices that the compiler's
   plan writer, the plan contract and lmrt share (docs/distributed.md, "Stage 3").

   A plan compiled with zero = 3 for D > 1 data ranks keeps each parameter's logical
   type in Param.type, and its programs bind the parameter (and its gradient) as the
   rank's slice of the flattened tensor, padded: [ceil(n / D)] elements, rank r's being
   elements [r c, (r + 1) c) of n (c = ceil(n / D)), zeros past n. These are
   contract.h's zeroShard ranges of stages 1 and 2, each padded to c. */
#pragma once
#include <cstdint>

#include "contract/plan.pb.h"

namespace lmrt {

/* Whether the programs of a plan with this mesh bind its parameters as slices. */
inline bool zeroSlicesParams(const plan::Mesh &mesh) { return mesh.zero() >= 3 && mesh.data() > 1; }

/* The padded slice's element count of an n-element parameter over `ranks` ranks. */
inline int64_t zeroSliceLength(int64_t n, int64_t ranks) { return (n + ranks - 1) / ranks; }

/* The type the programs bind parameter `p` at: its own, or under ZeRO stage 3 the slice. */
inline plan::TensorType boundParamType(const plan::Plan &plan, const plan::Param &p) {
  if (!zeroSlicesParams(plan.train().mesh())) return p.type();
  int64_t n = 1;
  for (int64_t d : p.type().shape()) n *= d;
  plan::TensorType t;
  t.set_dtype(p.type().dtype());
  t.add_shape(zeroSliceLength(n, plan.train().mesh().data()));
  return t;
}

}  // namespace lmrt

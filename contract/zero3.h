/* Implements: the one fact about ZeRO's slices that the compiler's plan writer, the
   plan contract and lmrt share (docs/distributed.md, "Stage 2" and "Stage 3").

   A plan compiled with zero = 3 for D > 1 data ranks keeps each parameter's logical
   type in Param.type, and its programs bind the parameter (and its gradient) as the
   rank's slice of the flattened tensor, padded: [ceil(n / D)] elements, rank r's being
   elements [r c, (r + 1) c) of n (c = ceil(n / D)), zeros past n. These are
   contract.h's zeroShard ranges of stage 1, each padded to c. With zero = 2 the
   programs bind the parameters whole and only the train step's gradients as that
   padded slice (the train step reduce-scatters them). */
#pragma once
#include <cstdint>

#include "contract/plan.pb.h"

namespace lmrt {

/* Whether the programs of a plan with this mesh bind its parameters as slices. */
inline bool zeroSlicesParams(const plan::Mesh &mesh) { return mesh.zero() >= 3 && mesh.data() > 1; }

/* Whether the train step of a plan with this mesh returns each gradient as the slice. */
inline bool zeroSlicesGrads(const plan::Mesh &mesh) { return mesh.zero() >= 2 && mesh.data() > 1; }

/* The padded slice's element count of an n-element parameter over `ranks` ranks. */
inline int64_t zeroSliceLength(int64_t n, int64_t ranks) { return (n + ranks - 1) / ranks; }

/* The padded slice of a tensor of type `whole` over `ranks` ranks: [ceil(n / ranks)];
   an empty tensor stays as it is (-lm-zero-shard-params leaves it). */
inline plan::TensorType zeroSliceType(const plan::TensorType &whole, int64_t ranks) {
  int64_t n = 1;
  for (int64_t d : whole.shape()) n *= d;
  if (n == 0) return whole;
  plan::TensorType t;
  t.set_dtype(whole.dtype());
  t.add_shape(zeroSliceLength(n, ranks));
  return t;
}

/* The type the programs bind parameter `p` at: its own, or under ZeRO stage 3 the slice. */
inline plan::TensorType boundParamType(const plan::Plan &plan, const plan::Param &p) {
  if (!zeroSlicesParams(plan.train().mesh())) return p.type();
  return zeroSliceType(p.type(), plan.train().mesh().data());
}

/* The type the train step binds parameter `p`'s gradient at: the parameter's, or from
   ZeRO stage 2 on the slice. */
inline plan::TensorType boundGradType(const plan::Plan &plan, const plan::Param &p) {
  if (!zeroSlicesGrads(plan.train().mesh())) return p.type();
  return zeroSliceType(p.type(), plan.train().mesh().data());
}

}  // namespace lmrt

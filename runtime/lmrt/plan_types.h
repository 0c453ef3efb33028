/* Implements: the conversions from plan protobuf messages to the runtime's own
   types (TensorType, kernel Attrs), shared by validation, the executor and tools. */
#pragma once
#include <string>

#include "plan.pb.h"
#include "runtime/kernels/registry.h"
#include "runtime/lmrt/tensor.h"

namespace lmrt {

/* "" when `t` has a known dtype and no negative dim, else what is wrong. */
std::string checkPlanType(const plan::TensorType &t);
/* Converts a type that passed checkPlanType. */
TensorType toTensorType(const plan::TensorType &t);
plan::TensorType toPlanType(const TensorType &t);
/* "f32[2, 3]", with "invalid" for a bad dtype (used in messages before validation). */
std::string planTypeStr(const plan::TensorType &t);
const char *bufferKindName(plan::Buffer::Kind k);

/* Decodes a step's attributes, adding the op's defaults (runtime/plan/op_table.h)
   for those it leaves out; throws Error naming the attribute if one has no value. */
kernels::Attrs decodeAttrs(const plan::Step &step);

}  // namespace lmrt

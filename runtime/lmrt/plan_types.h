/* Implements: the conversions from plan protobuf messages to the runtime's own
   types (TensorType, kernel Attrs), shared by validation, the executor and tools. */
#pragma once
#include <string>

#include "plan.pb.h"
#include "runtime/kernels/registry.h"
#include "runtime/lmrt/tensor.h"
#include "runtime/plan/contract.h"

namespace lmrt {

/* Converts a type that passed checkPlanType (runtime/plan/contract.h, which also
   has planTypeStr and bufferKindName). */
TensorType toTensorType(const plan::TensorType &t);
plan::TensorType toPlanType(const TensorType &t);

/* Decodes a step's attributes, adding the op's defaults (runtime/plan/op_table.h)
   for those it leaves out; throws Error naming the attribute if one has no value. */
kernels::Attrs decodeAttrs(const plan::Step &step);

}  // namespace lmrt

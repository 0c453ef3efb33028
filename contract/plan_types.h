/* Implements: the conversions from plan protobuf messages to the runtime's own
   types (TensorType, kernel Attrs), shared by validation, the executor and tools. */
#pragma once
#include <string>

#include "contract/plan.pb.h"
#include "contract/attrs.h"
#include "base/tensor.h"
#include "contract/contract.h"

namespace lmrt {

/* Converts a type that passed checkPlanType (contract/contract.h, which also
   has planTypeStr and bufferKindName). */
TensorType toTensorType(const plan::TensorType &t);
plan::TensorType toPlanType(const TensorType &t);

/* Decodes a step's attributes, adding the op's ODS defaults for those it leaves
   out (kernels::addOpDefaults); throws Error naming the attribute if one has no value. */
kernels::Attrs decodeAttrs(const plan::Step &step);

}  // namespace lmrt

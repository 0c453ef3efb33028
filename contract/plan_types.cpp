/* Implements: plan message -> runtime type conversions (see plan_types.h). */
#include "contract/plan_types.h"

namespace lmrt {

TensorType toTensorType(const plan::TensorType &t) {
  TensorType r;
  r.dtype = t.dtype() == plan::F64 ? DType::F64 : t.dtype() == plan::I32 ? DType::I32 : DType::F32;
  r.shape.assign(t.shape().begin(), t.shape().end());
  return r;
}

plan::TensorType toPlanType(const TensorType &t) {
  plan::TensorType r;
  r.set_dtype(t.dtype == DType::F64 ? plan::F64 : t.dtype == DType::I32 ? plan::I32 : plan::F32);
  for (int64_t d : t.shape) r.add_shape(d);
  return r;
}

kernels::Attrs decodeAttrs(const plan::Step &step) {
  kernels::Attrs attrs;
  for (const auto &[name, a] : step.attrs()) {
    switch (a.value_case()) {
    case plan::Attr::kI: attrs.set(name, (int64_t)a.i()); break;
    case plan::Attr::kF: attrs.set(name, a.f()); break;
    case plan::Attr::kB: attrs.set(name, a.b()); break;
    case plan::Attr::kS: attrs.set(name, a.s()); break;
    case plan::Attr::kInts:
      attrs.set(name, std::vector<int64_t>(a.ints().v().begin(), a.ints().v().end()));
      break;
    case plan::Attr::kData: attrs.set(name, a.data()); break;
    default: throw Error("attribute '" + name + "' has no value");
    }
  }
  // Attributes the step leaves out take the op's ODS default, so a kernel
  // never falls back on a default of its own.
  kernels::addOpDefaults(step.op(), attrs);
  return attrs;
}

}  // namespace lmrt

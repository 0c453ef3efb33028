/* Implements: plan message -> runtime type conversions (see plan_types.h). */
#include "contract/plan_types.h"

namespace lmrt {

TensorType toTensorType(const plan::TensorType &t) {
  TensorType r;
  switch (t.dtype()) {
  case plan::F64: r.dtype = DType::F64; break;
  case plan::I32: r.dtype = DType::I32; break;
  case plan::BF16: r.dtype = DType::BF16; break;
  case plan::F16: r.dtype = DType::F16; break;
  default: r.dtype = DType::F32; break;
  }
  r.shape.assign(t.shape().begin(), t.shape().end());
  return r;
}

plan::TensorType toPlanType(const TensorType &t) {
  plan::TensorType r;
  switch (t.dtype) {
  case DType::F32: r.set_dtype(plan::F32); break;
  case DType::F64: r.set_dtype(plan::F64); break;
  case DType::I32: r.set_dtype(plan::I32); break;
  case DType::BF16: r.set_dtype(plan::BF16); break;
  case DType::F16: r.set_dtype(plan::F16); break;
  }
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

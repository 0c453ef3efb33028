/* Implements: plan validation (see validate.h): the plan contract, with each
   step's types and attributes checked by its kernel. */
#include "runtime/exec/validate.h"

#include "runtime/cpu/kernels/registry.h"
#include "contract/plan_types.h"
#include "base/tensor.h"

namespace lmrt {

void validatePlan(const plan::Plan &plan, const std::string &origin) {
  auto kernelCheck = [](const plan::Step &step, const std::vector<plan::TensorType> &in,
                        const std::vector<plan::TensorType> &out) -> std::string {
    const kernels::KernelDef *def = kernels::findKernel(step.op());
    // The contract has matched the step against the op table, and the kernel
    // table agrees with it (kernels::compareWithOpTable, unit-tested).
    if (!def) return "no kernel for op '" + step.op() + "'";
    std::vector<TensorType> inTypes, outTypes;
    for (const plan::TensorType &t : in) inTypes.push_back(toTensorType(t));
    for (const plan::TensorType &t : out) outTypes.push_back(toTensorType(t));
    try {
      return def->check(inTypes, outTypes, decodeAttrs(step));
    } catch (const Error &e) {  // attribute getters throw on an attribute of another kind
      return e.what();
    }
  };
  std::string problem = contract::checkPlan(plan, kernelCheck);
  if (!problem.empty()) throw Error("plan '" + origin + "': " + problem);
}

}  // namespace lmrt

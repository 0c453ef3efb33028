/* Implements: plan validation (see validate.h). */
#include "runtime/exec/validate.h"

#include "base/tensor.h"
#include "contract/contract.h"
#include "runtime/exec/backend_registry.h"

namespace lmrt {

void validatePlan(const plan::Plan &plan, const std::string &origin) {
  const contract::StepCheck &kernelCheck = registeredStepCheck();
  if (!kernelCheck)
    throw Error("plan '" + origin + "': no kernel checks are registered to validate it with (the CPU backend is "
                "not linked in)");
  std::string problem = contract::checkPlan(plan, kernelCheck);
  if (!problem.empty()) throw Error("plan '" + origin + "': " + problem);
}

}  // namespace lmrt

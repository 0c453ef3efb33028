/* Implements: lmrt's switches from the environment (LMRT_OVERLAP_COLLECTIVES,
   LMRT_NCCL_GROUPS_OF_ONE, LMRT_CUDA_ATTENTION, ...): a value the variable does not
   take is an error naming the variable and the values it takes, never a silent
   fallback to the default (a typo would otherwise measure the wrong kernel). */
#pragma once
#include <initializer_list>
#include <string>

namespace lmrt {

/* Unset or empty: `byDefault`; "0": off; "1": on; anything else throws. */
bool envSwitch(const char *name, bool byDefault = false);

/* Unset or empty: ""; otherwise one of `allowed`, or it throws. */
std::string envChoice(const char *name, std::initializer_list<const char *> allowed);

}  // namespace lmrt

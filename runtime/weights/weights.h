/* Implements: a Session's parameters to and from safetensors files, under their
   stable plan names ("blocks.0.mlp.w1"), so weights move to and from PyTorch
   through a name map rather than a converter. */
#pragma once
#include <map>
#include <string>

#include "runtime/exec/session.h"

namespace lmrt {

/* Writes every parameter value, in plan order, with `metadata` in __metadata__. */
void saveWeights(Session &session, const std::string &path,
                 const std::map<std::string, std::string> &metadata = {});
/* Loads every parameter from `path`. Each must be present with the parameter's
   shape; f32 <-> f64 is converted (an f64 plan can start from f32 weights).
   Missing, misshapen or extra tensors, and NaN or Inf values, are errors naming
   the tensor; nothing is copied unless all is well. A checkpoint's
   state.safetensors is accepted too (its "adamw.*" moments are skipped). */
void loadWeights(Session &session, const std::string &path);

}  // namespace lmrt

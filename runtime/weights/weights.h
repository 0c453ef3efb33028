/* Implements: a Session's parameters to and from safetensors files, under their
   stable plan names ("blocks.0.mlp.w1"), so weights move to and from PyTorch
   through a name map rather than a converter. */
#pragma once
#include <map>
#include <string>
#include <vector>

#include "runtime/exec/session.h"
#include "runtime/weights/init_map.h"

namespace lmrt {

/* Writes every parameter value, in plan order, with `metadata` in __metadata__. */
void saveWeights(Session &session, const std::string &path,
                 const std::map<std::string, std::string> &metadata = {});
/* How `lmrt run --init` reads its file: the renames of --init-map (init_map.h), and
   whether every parameter must come from the file and every tensor of the file must
   load into one (strict, the default) or only those both sides share (--init-strict=false,
   fine-tuning from a model with another head). */
struct InitOptions {
  std::vector<InitRename> renames;
  bool strict = true;
};

/* What a load did, by parameter name (`unused` and `dropped` by the file's names). */
struct InitReport {
  std::vector<std::string> loaded, leftAtInit, unused, dropped;
};

/* Loads the parameters from `path` under `options`. A loaded parameter must have its
   tensor's shape; f32 <-> f64 is converted (an f64 plan can start from f32 weights).
   Missing or extra tensors (when strict), misshapen tensors, two tensors renamed onto
   one parameter, and NaN or Inf values are errors naming the tensor; nothing is
   copied unless all is well. A checkpoint's state.safetensors is accepted too (its
   optimizer state is skipped). */
InitReport loadWeights(Session &session, const std::string &path, const InitOptions &options);
/* "init: loaded 20 of 22 parameters; left at their initializer (2): ...; ..." for the
   log, each list cut after 8 names. */
std::string describeInitReport(const InitReport &report, size_t params);

/* Every parameter from `path`, strictly, under its own name. */
void loadWeights(Session &session, const std::string &path);

}  // namespace lmrt

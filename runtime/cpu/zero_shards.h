/* Implements: ZeRO stages 1 and 2 on the CPU backend (docs/distributed.md, "ZeRO").

   Under `mpirun -np D` with a plan compiled with `zero = 1`, the train step is the
   data-parallel one (every rank ends it with the whole averaged gradient), and the
   optimizer is what is split: rank r keeps the optimizer state of, and updates, only
   its slice [begin, end) of every parameter (contract.h's zeroShard), then every
   parameter is all-gathered so each rank again holds all of it. The optimizers ZeRO
   accepts (AdamW, SGD, Lion; lmc refuses the others) treat each element on its own,
   so a slice updated alone gets the bits the whole tensor would: the run stays
   byte-identical to plain data parallelism. The gradient norm reads the whole
   gradients, as under DP, so clipping sums in the same order.

   Stage 2 (`zero = 2`): the plan's train step reduce-scatters each gradient itself
   (-lm-zero-shard-params) and returns only this rank's slice of its mean, padded
   (contract/zero3.h): the gradient buffers are slices, the optimizer's views read them
   from their start. The norm is put together from the slices in DP's order
   (zero_grad_norm.h).

   Checkpoints hold the logical tensors: the state is gathered to whole tensors when
   written (on every rank, as the gather is collective) and each rank takes its
   slices back when one is restored, so a ZeRO checkpoint resumes on one process and
   under DP, and the reverse. */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/host_memory.h"
#include "base/tensor.h"
#include "contract/contract.h"
#include "runtime/cpu/param_view.h"

namespace lmrt::cpu {

/* The global gradient norm, bit for bit DP's (zero_grad_norm.h), from each gradient's
   slice: `params` gives the whole parameters' dtypes, element counts and frozen flags,
   `slices[i]` this rank's elements zeroShard(params[i].numel, ranks, rank) of gradient
   i (at its start). A frozen parameter has no gradient: it adds the zeros it is (DP adds
   their +0). Collective. */
double zeroGradNorm(const std::vector<ParamView> &params, const std::vector<const void *> &slices, int rank,
                    int ranks);
/* Each gradient's sum of squares, bit for bit gradSumSquares of the whole gradient
   (grad_clip.h), from the slices as zeroGradNorm reads them; a frozen parameter's is 0.
   The norm of a tensor-parallel mesh adds them over the tensor group
   (comm::sumOverTensorGroup). Collective over the data group. */
std::vector<double> zeroGradSumSquares(const std::vector<ParamView> &params, const std::vector<const void *> &slices,
                                       int rank, int ranks);

class ZeroShards {
public:
  /* The slices of `params` (the whole parameters; under stage 2 their `grad` the
     rank's gradient slice, the train step's) that rank `rank` of `ranks` owns, for ZeRO
     stage `stage` (1 or 2). */
  ZeroShards(const std::vector<ParamView> &params, int rank, int ranks, int stage);
  int stage() const { return stage_; }

  /* Stage 2: the global gradient norm from the slices, bit for bit DP's
     (zero_grad_norm.h); frozen parameters add the zeros they are. Collective. */
  double gradNorm();
  /* Stage 2: each gradient's sum of squares from the slices (zeroGradSumSquares). Collective. */
  std::vector<double> gradSumSquares();

  /* "ZeRO stage 1: rank r keeps the optimizer state of N of the M parameter elements ...". */
  std::string describe() const;

  /* The optimizer's view: each parameter's slice as a flat parameter of its own. */
  const std::vector<ParamView> &views() const { return shards_; }
  /* This rank's slice of parameter i (and of its optimizer state). */
  ShardRange range(size_t i) const { return ranges_[i]; }
  /* Every rank's updated slices into every rank's whole parameters (frozen ones,
     which no rank changes, are skipped). Collective: every rank calls it. */
  void gatherParams(const std::vector<ParamView> &params);

  /* Whole tensors of the optimizer's slices: `slices` are the optimizer's state
     tensors in checkpoint order (each a slice of parameter `owner[i]`), gathered into
     host buffers kept until the next call. Collective. */
  std::vector<void *> gatherState(const std::vector<void *> &slices, const std::vector<size_t> &owner);
  /* Zeroed whole tensors for a restore to fill, then scatterState copies this rank's
     slices of them into `slices` and frees them. */
  std::vector<void *> wholeState(const std::vector<size_t> &owner);
  void scatterState(const std::vector<void *> &slices, const std::vector<size_t> &owner);
  /* Frees the whole tensors of the last gatherState (the next optimizer step does). */
  void release() { state_.clear(), state_.shrink_to_fit(); }

private:
  /* Every rank's slice of a tensor of `numel` elements of `dtype` into `whole`. */
  void gather(const void *slice, void *whole, int64_t numel, DType dtype, const std::string &what);

  int rank_, ranks_, stage_;
  std::vector<ParamView> whole_;   // the parameters' types and sizes
  std::vector<ShardRange> ranges_; // this rank's slice of each
  std::vector<ParamView> shards_;
  std::vector<HostBytes> state_;   // whole state tensors, during a checkpoint write or restore
  HostBytes staging_;              // a gather of a size the ranks do not divide
};

}  // namespace lmrt::cpu

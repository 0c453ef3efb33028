/* Implements: the table of CPU kernels the executor dispatches plan steps to.
   One entry per lm dialect op (name without "lm."), each with a shape/attribute
   check (used when a plan is validated) and a run function (f32 and f64). */
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "base/tensor.h"
#include "contract/attrs.h"

namespace lmrt::kernels {

struct KernelCall {
  std::vector<TensorRef> in;
  std::vector<TensorRef> out;
  const Attrs &attrs;
};

struct KernelDef {
  const char *op;
  int numInputs;
  int numOutputs;
  /* Returns "" when the operand/result types and attributes are valid for this op,
     else a message saying what is wrong ("matmul: lhs f32[2, 3] and rhs f32[4, 5]
     disagree on the contracted dimension (3 vs 4)"). */
  std::string (*check)(const std::vector<TensorType> &in, const std::vector<TensorType> &out,
                       const Attrs &attrs);
  /* Runs the kernel; every output is fully overwritten (no accumulation).
     May throw lmrt::Error on bad data (e.g. a token id outside the vocabulary). */
  void (*run)(const KernelCall &call);
};

/* "" when `kernels` and the plan's op table (contract/op_table.h, generated
   from the ODS) agree: one kernel per listed op with the op's operand and result
   counts, and no kernel that is not listed (or listed twice). Else every
   disagreement, one per line. The unit tests run it on allKernels(). */
std::string compareWithOpTable(const std::vector<KernelDef> &kernels);

/* A bucket (docs/distributed.md, "Buckets and overlap"): the all_reduce steps `calls`, of
   one group, dtype and `mean`, as one collective over their inputs laid end to end (one
   staging buffer in, the sums out to each output). Each element's sum is the one its own
   step's all-reduce computes (communicator.h's rank order), so the bits do not depend on
   how the steps are bucketed. */
void runAllReduceBucket(const std::vector<KernelCall> &calls);

/* A reduce-scatter bucket (ZeRO-2's and -3's gradients): the reduce_scatter steps `calls`,
   along dimension 0, of one group and dtype, as one collective: rank q's slice of every
   input laid end to end in part q of one staging buffer, then each output's slice out of
   the sums. The same bits as each step alone (each element's rank-order sum). */
void runReduceScatterBucket(const std::vector<KernelCall> &calls);

/* Two matmul steps that neither read nor write each other's outputs, at once: with a
   team of exactly two threads (outside a parallel region), each runs whole on one
   thread, where one at a time each would be cut in two blocks, one a thread. A
   backward pass's weight-gradient and input-gradient GEMMs of one linear layer come
   in such pairs, of equal work: one whole GEMM a core packs its operands once and
   runs its microkernel on wider panels (docs/runtime.md, "Matmul pairs"). The bits
   are those of each step alone (every output element is one dot product over the
   whole K, however the output is cut). Returns false, having run nothing, for
   another team size; else true, with `failed` = -1, or the step (0 or 1) whose
   error it rethrows after both ended. */
bool runMatmulPair(const KernelCall &a, const KernelCall &b, int &failed);

/* nullptr when no kernel has that name. */
const KernelDef *findKernel(std::string_view op);
/* All kernels, for listing and tests. */
const std::vector<KernelDef> &allKernels();

}  // namespace lmrt::kernels

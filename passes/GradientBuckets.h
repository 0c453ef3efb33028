//===- GradientBuckets.h - the gradients' buckets ---------------*- C++ -*-===//
//
// The gradient buckets of -lm-data-parallel's all-reduces and of
// -lm-zero-shard-params' reduce-scatters (ZeRO stages 2 and 3), as PyTorch
// DDP cuts them: the gradients in the order the backward computes them, about
// bucket_mb MiB each, a bucket's collectives placed together right after the
// op that computes its last gradient (lmrt runs a run of adjacent collectives
// of one kind as one collective). docs/distributed.md, "Buckets and overlap".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <vector>

namespace mlir::lm {

/// A gradient result of the train step and where it is computed.
struct Gradient {
  unsigned result; // its index among the return's operands
  Operation *def;  // the op of the step's body that computes it, or null (placed before the return)
  int64_t bytes;
};

/// The gradients of train step `f` in the order the backward computes them: by
/// their op's place in the body, those of one op by result number.
std::vector<Gradient> gradientsInBackwardOrder(func::FuncOp f, func::ReturnOp ret);

/// Cuts the gradients (in backward order) into buckets of at most `capBytes`
/// (every gradient alone with 0): a gradient that would take the bucket past the
/// size starts a new one, so one larger than the size is a bucket of its own.
/// Buckets are cut only between two ops, so that two buckets' collectives are
/// never adjacent (lmrt takes a run of adjacent ones for one bucket).
std::vector<std::vector<Gradient>> gradientBuckets(const std::vector<Gradient> &grads, int64_t capBytes);

/// The op after which a bucket's collectives go (the one computing its last
/// gradient), or null: before the return.
Operation *bucketEnd(const std::vector<Gradient> &bucket);

/// The bucket size in bytes: `optionMb` when >= 0, else the module's lm.mesh
/// bucket_mb, else 25 MiB (DDP's bucket_cap_mb). Fails after an error naming
/// `pass` for a size out of [0, 2^20] MiB.
FailureOr<int64_t> bucketBytes(ModuleOp module, double optionMb, StringRef pass);

} // namespace mlir::lm

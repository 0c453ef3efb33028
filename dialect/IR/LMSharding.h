//===- LMSharding.h - sharding rules of lm ops ------------------*- C++ -*-===//
//
// The vocabulary of the sharding interface (LMInterfaces.td,
// ShardingOpInterface), modelled on upstream MLIR's `mesh` dialect so that a
// move to it is mechanical: an op states its iteration space as loops, each
// parallel, a reduction (splitting it leaves each rank a partial sum) or
// whole (the op needs all of it: a normalised or causal dimension), and for
// every operand and result which loop each tensor dimension follows
// (upstream's iterator types and indexing maps). A tensor's sharding is, as in
// upstream's MeshSharding, the mesh axes splitting each of its dimensions plus
// a partial-sum marker; LMC's one addition is `segments`, for a dimension
// made of equal segments each split the same way (a packed q|k|v projection:
// rank r holds block r of q, of k and of v), which upstream expresses by
// reordering the weight. The rules live in ShardingRules.cpp; -lm-spmd
// (passes/Spmd.cpp) reads them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace mlir::lm {

/// How an op treats a split of one loop of its iteration space (upstream's
/// utils::IteratorType, with `Whole` for loops it cannot split at all).
enum class LoopKind { Parallel, Reduction, Whole };

struct ShardingLoop {
  LoopKind kind = LoopKind::Parallel;
  /// A split must keep blocks of this many elements together (attention's
  /// head loop: one head, head_dim elements).
  int64_t unit = 1;
};

/// Where one dimension of an operand or result sits in the loops.
struct ShardingDim {
  /// The loop it follows; -1 for none (a broadcast size-1 dimension, or a
  /// dimension the op cannot take split).
  int64_t loop = -1;
  /// The dimension is this many equal segments of the loop's extent, each
  /// split as the loop is (a slice's operand: the sliced segment is one).
  int64_t segments = 1;
  /// The dimension has one element per unit of the loop rather than one per
  /// element (an attention score bias's head dimension: one per head), so a
  /// split keeps whole elements of it.
  bool perUnit = false;
};

/// One op's sharding rule: its loops and, per operand and result, one entry
/// per tensor dimension (rank-0 tensors have none).
struct ShardingRule {
  llvm::SmallVector<ShardingLoop> loops;
  llvm::SmallVector<llvm::SmallVector<ShardingDim, 4>> operands;
  llvm::SmallVector<llvm::SmallVector<ShardingDim, 4>> results;
  /// The loop tensor parallelism splits when it starts from this op
  /// (attention: its heads); -1 for ops that are only propagated through.
  int64_t tensorParallelLoop = -1;
};

/// The sharding of one tensor over the mesh's tensor axis (mesh axis 1): the
/// dimension it splits (-1: none) into blocks within each of `segments`
/// segments, or a partial sum (each rank holds a term; the value is their
/// sum). Upstream's split axes per dimension restricted to one mesh axis.
struct TensorSharding {
  int64_t dim = -1;
  int64_t segments = 1;
  bool partial = false;

  bool isReplicated() const { return dim < 0 && !partial; }
  bool operator==(const TensorSharding &o) const {
    return dim == o.dim && segments == o.segments && partial == o.partial;
  }
  bool operator!=(const TensorSharding &o) const { return !(*this == o); }
};

} // namespace mlir::lm

//===- SequenceParallel.h - -lm-spmd's sequence-parallel step ---*- C++ -*-===//
//
// Sequence parallelism (Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models"; Megatron-LM's
// --sequence-parallel) on top of -lm-spmd's tensor-parallel layout: the work
// between a row-parallel layer and the next column-parallel one (the bias,
// the residual add, the norms) runs on the rank's part of the sequence. The
// row-parallel layer's lm.all_reduce becomes an lm.reduce_scatter along the
// sequence, the region's edges an lm.all_gather. docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialect/IR/LMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::lm {

/// Rewrites the tensor-parallel program `f` (after -lm-spmd's localisation)
/// for sequence parallelism over `ranks` ranks of mesh axis `axis`.
/// `rowParallel` are the all-reduces of the row-parallel layers' partial
/// sums; `tensorSplit` says whether a value is split by tensor parallelism
/// (such a value never joins the sequence-parallel region). Fails, after an
/// error naming the tensor and the axis, when the axis does not divide a
/// sequence.
LogicalResult sequenceParallel(func::FuncOp f, ArrayRef<AllReduceOp> rowParallel,
                               llvm::function_ref<bool(Value)> tensorSplit, int64_t axis, int64_t ranks);

/// The key of a rank's part of a dropout that keys its mask by element index
/// (contract/dropout_math.h): i32[2, rows, 2], the rows' `key` then the rank's
/// coordinate along mesh axis `axis`. -lm-spmd gives it to head-split
/// attention, the sequence-parallel region to its dropouts.
Value partDropoutKey(OpBuilder &b, Location loc, Value key, int64_t axis, int64_t ranks);

} // namespace mlir::lm

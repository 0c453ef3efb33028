//===- VocabParallel.h - -lm-spmd's vocabulary-parallel step ----*- C++ -*-===//
//
// The vocabulary-parallel embedding of Megatron-LM (VocabParallelEmbedding):
// the rows of the vocabulary table are split over the tensor axis, each rank
// looks up the ids in its rows (the others give zero rows) and an
// lm.all_reduce sums the parts. A tied LM head on the rank's rows becomes
// Megatron-LM's vocabulary-parallel cross-entropy (fused and chunked: no
// logits stored), or its logits all-gathered where a program returns them.
// docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialect/IR/LMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::lm {

/// The vocabulary tables of `module` to split over `ranks` ranks: the largest
/// table an lm.embedding reads (by rows), when it is a parameter that every
/// function reads only through lm.embedding and tied output projections whose
/// logits feed only the loss or a return, and
/// that no function splits otherwise (`otherwiseSplit`). One the axis does
/// not divide stays whole, with a warning naming it and the axis.
llvm::StringSet<> vocabularyTables(ModuleOp module, int64_t ranks,
                                   llvm::function_ref<bool(func::FuncOp, BlockArgument)> otherwiseSplit);

/// Rewrites the reads of `tables` in `f` into one rank's: the table's type
/// becomes its rows / `ranks` (its lm.sharding set to `sharding`), each
/// lookup a masked local lookup and an lm.all_reduce over mesh axis `axis`,
/// each tied head's loss the vocabulary-parallel loss. (Under
/// sequence parallelism the lookup's sum stays an all-reduce: its result
/// enters the sequence-parallel region as any whole value does.)
void splitVocabulary(func::FuncOp f, const llvm::StringSet<> &tables, int64_t axis, int64_t ranks,
                     DictionaryAttr sharding);

} // namespace mlir::lm

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
#include "llvm/ADT/StringMap.h"

namespace mlir::lm {

/// The vocabulary's parameters of `module` to split over `ranks` ranks, each
/// with the dimension that indexes the vocabulary: the vocabulary is the rows
/// of the largest table an lm.embedding reads; a parameter with that many
/// rows read by lookups, or with that many output columns read as the rhs of
/// an output projection (a tied table [V, d] read transposed, an untied head
/// [d, V]), is split when every function reads it only through lookups and
/// heads whose logits (after the add of a bias parameter [V], which is split
/// with them) feed only lm.cross_entropy and lm.accuracy, or only a return,
/// and no function splits it otherwise (`otherwiseSplit`). Each rank holds a
/// block of ceil(V / ranks) classes; when the axis does not divide V the last
/// block is padded past V (padding rows that stay zero and that the loss, the
/// accuracy and the returned logits leave out). When a block that size would
/// leave a rank no class of the vocabulary (V = 5 over 4 ranks) everything
/// stays whole, with a warning naming each such table or head and the axis.
struct VocabularySplit {
  int64_t vocab = 0;                // V: the vocabulary's classes
  int64_t rows = 0;                 // ceil(V / ranks): each rank's block of classes
  llvm::StringMap<int64_t> params;  // the split parameters, each with its vocabulary dimension
};
VocabularySplit vocabularyParameters(ModuleOp module, int64_t ranks,
                                     llvm::function_ref<bool(func::FuncOp, BlockArgument)> otherwiseSplit);

/// Rewrites the reads of `split.params` (vocabularyParameters') in `f` into
/// one rank's: each parameter's type becomes its block of the vocabulary (its
/// lm.sharding set to `sharding(rank, dim)`, with `logical_size = V` where
/// the blocks pad it), each lookup a masked local
/// lookup and an lm.all_reduce over mesh axis `axis`, each head's loss and
/// accuracy the vocabulary-parallel ones, a returned head's logits the
/// rank's columns all-gathered. (Under sequence parallelism the lookup's sum
/// stays an all-reduce: its result enters the sequence-parallel region as any
/// whole value does.)
void splitVocabulary(func::FuncOp f, const VocabularySplit &split, int64_t axis, int64_t ranks,
                     llvm::function_ref<DictionaryAttr(int64_t rank, int64_t dim)> sharding);

} // namespace mlir::lm

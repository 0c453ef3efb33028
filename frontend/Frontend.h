//===- Frontend.h - .lm source to lm dialect --------------------*- C++ -*-===//
//
// The entry point of the frontend: lexes, parses and type-checks a `.lm` file
// and emits the module described in docs/dialect.md ("Function conventions").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir::lm {

/// The largest `.lm` source, imported file or `.mlir` module lmc reads (256 MiB):
/// far beyond any model file, and a bound on what a mistaken path (a log, a
/// disk image) costs before it is refused with this number.
constexpr uint64_t kMaxSourceBytes = uint64_t(256) << 20;

struct FrontendOptions {
  /// `-D name=value` overrides of config constants, in command-line order.
  std::vector<std::pair<std::string, std::string>> defines;
  /// `--preset NAME`: the config values of `preset NAME { ... }` (empty: none).
  std::string preset;
  /// Element type of every float tensor: "f32" (default) or "f64" (gradient checks).
  std::string floatType = "f32";
  /// Also emit @<model>.prefill and @<model>.decode for a causal model
  /// (incremental decoding; `lmc compile --no-decode-programs` turns it off).
  bool decodePrograms = true;
  /// `lmc compile --mesh data=D,tensor=T`: the mesh's axes over the train block's
  /// `mesh` (0: the block's, or 1). With data = D > 1 the module is the program of
  /// one of D data-parallel ranks: the objectives' inputs hold batch / D rows
  /// (docs/distributed.md).
  int64_t meshData = 0, meshTensor = 0;
  /// `lmc compile --mesh ...,sp`: sequence parallelism over the tensor axis, over
  /// the train block's `mesh = { ..., sequence_parallel = true }` (-1: the block's).
  int sequenceParallel = -1;
  /// `lmc compile --zero N`: the ZeRO stage over the train block's `zero` (-1: the
  /// block's, or 0). Needs data > 1 (docs/distributed.md, "ZeRO").
  int64_t zero = -1;
  /// `lmc compile --bucket-mb N`: the data-parallel gradient buckets in MiB over the
  /// train block's `bucket_mb` (-1: the block's, or 25; 0: one all-reduce per gradient).
  double bucketMb = -1;
  /// `lmc compile --prefetch-mb N`: ZeRO stage 3's gathered MiB issued ahead of the ops
  /// that read them, over the train block's `prefetch_mb` (-1: the block's, or 0: none).
  double prefetchMb = -1;
};

/// Emits the module for the main buffer of `sourceMgr`. Every error is reported
/// through `mlir::emitError` at a FileLineColLoc of the source, so a
/// SourceMgrDiagnosticHandler prints it as `file:line:col: error: ...` with the
/// line and a caret. Returns nullptr after reporting at least one error.
OwningOpRef<ModuleOp> emitModuleFromSource(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                                           const FrontendOptions &options);

} // namespace mlir::lm

//===- KernelCompiler.h - Generated kernel source to machine code -*- C++ -*-===//
//
// Compiles the kernel source of a plan for one target with the system's
// compilers: the host C++ compiler into a shared object (CPU), nvcc into a
// fatbin (CUDA: sm_80 and sm_90 code plus compute_90 PTX). Results are kept in
// a content-addressed cache (key: source, flags and compiler identity), so an
// unchanged model recompiles without running a compiler.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::lm {

enum class KernelTarget { Cpu, Cuda };

struct KernelCompileOptions {
  /// Cache folder; "" picks $LMC_CACHE_DIR, else $XDG_CACHE_HOME/lmc, else ~/.cache/lmc.
  std::string cacheDir;
  /// Compilers; "" picks $LMC_CXX / $LMC_NVCC, else c++ / nvcc on PATH (and /usr/local/cuda/bin).
  std::string cxx, nvcc;
};

struct CompiledKernels {
  std::string target;   ///< "cpu-x86-64" or "cuda"
  std::string image;    ///< the shared object or fatbin bytes
  std::string compiler; ///< the command line, for the plan's record
  bool cached = false;  ///< taken from the cache, no compiler ran
};

/// Compiles `source` for `target`; the error names the compiler, its exit
/// status and its diagnostics.
llvm::Expected<CompiledKernels> compileKernels(llvm::StringRef source, KernelTarget target,
                                               const KernelCompileOptions &options);

} // namespace mlir::lm

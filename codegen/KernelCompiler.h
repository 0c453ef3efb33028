//===- KernelCompiler.h - Generated kernel source to machine code -*- C++ -*-===//
//
// Kernel compilation, the step after plan translation (docs/compilation.md):
// compiles the kernel source of a plan for one target with the system's
// compilers: the host C++ compiler into a shared object (CPU), nvcc into a
// fatbin (CUDA: sm_80 and sm_90 code plus compute_90 PTX). Results are kept in
// a content-addressed cache (key: source, flags and compiler identity), so an
// unchanged model recompiles without running a compiler.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "contract/plan.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace mlir::lm {

enum class KernelTarget { Cpu, Cuda };

/// The target's name in Plan.kernel_libraries: "cpu-x86-64" (the baseline ISA
/// the CPU library is compiled for) or "cuda".
llvm::StringRef getKernelTargetName(KernelTarget target);
/// The target a Plan.kernel_libraries name stands for; none for another name.
std::optional<KernelTarget> parseKernelTargetName(llvm::StringRef name);

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

/// Sets a library's image and, with it, the image's checksum
/// (KernelLibrary.image_fnv1a), so the two never disagree.
void setKernelImage(lmrt::plan::KernelLibrary &library, std::string image);

/// What compilePlanKernels did, for lmc's summary line.
struct KernelCompileReport {
  unsigned compiledLibraries = 0; ///< a compiler ran
  unsigned cachedLibraries = 0;   ///< taken from the kernel cache
};

/// Compiles the source of each of the plan's kernel libraries (what plan
/// translation left there, one library per target) for its target and embeds
/// the image and the compiler's command line. Fails with compileKernels'
/// error (which names the compiler) at the first library that does not compile.
llvm::Expected<KernelCompileReport> compilePlanKernels(lmrt::plan::Plan &plan, const KernelCompileOptions &options);

} // namespace mlir::lm

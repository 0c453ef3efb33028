//===- CompileToPlanTest.cpp - Tests of compileToPlan ---------------------===//
//
// Tests that compileToPlan, called in-process the way lmc calls it, turns a
// small .lm source into a plan (programs with steps, the generated kernels
// compiled for the CPU and taken from the kernel cache the second time), calls
// the caller's hooks at every stage, stops where asked, and reports errors as
// diagnostics: at the source line for a bad source, at the module for a
// compiler that fails, with the bad pass named for an extension point.
//
//===----------------------------------------------------------------------===//
#include "pipelines/CompileToPlan.h"

#include "base/hash.h"
#include "contract/contract.h"
#include "contract/plan_file.h"
#include "tools/RegisterLMDialects.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <vector>

using namespace mlir;
using namespace mlir::lm;

namespace {

/// A two-matmul byte-level language model: its `h @ w1 + b1` and gelu fuse
/// into one generated kernel (a GEMM epilogue), and more kernels come from the
/// backward pass.
constexpr const char *kTinyModel = R"(config { vocab = 256; d = 16; batch = 4; seq = 16 }

model tiny(tokens: i32[B, T]) -> f32[B, T, vocab] {
  param wte: [vocab, d] = normal(0.02)
  param w1: [d, d] = normal(0.02)
  param b1: [d] = zeros
  h = embed(wte, tokens)
  h = h + gelu(h @ w1 + b1)
  return h @ transpose(wte)
}

objective causal_lm(tokens: i32[batch, seq + 1]) {
  loss = cross_entropy(tiny(tokens[:, :-1]), tokens[:, 1:])
}

train {
  optimizer = adamw(lr = 1e-3)
}
)";

/// A folder of the test's own (the kernel cache), removed afterwards.
struct ScratchDir {
  llvm::SmallString<128> path;
  ScratchDir() {
    if (llvm::sys::fs::createUniqueDirectory("lmc-pipelines-test", path))
      ADD_FAILURE() << "cannot create a scratch folder";
  }
  ~ScratchDir() { llvm::sys::fs::remove_directories(path); }
};

/// One compileToPlan call, as lmc makes it: a SourceMgr holding the source and
/// a SourceMgrDiagnosticHandler printing every diagnostic (here into a string).
struct Compile {
  MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::string diagnostics;
  FailureOr<CompiledPlan> result = failure();

  Compile() : context(registry()) { context.printOpOnDiagnostic(false); }

  static DialectRegistry registry() {
    DialectRegistry registry;
    registerLMDialects(registry);
    return registry;
  }

  FailureOr<CompiledPlan> &run(const std::string &source, const CompileToPlanOptions &options) {
    sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, "tiny.lm"), llvm::SMLoc());
    llvm::raw_string_ostream os(diagnostics);
    SourceMgrDiagnosticHandler handler(sourceMgr, &context, os);
    result = compileToPlan(sourceMgr, context, options);
    return result;
  }
};

const lmrt::plan::Program *findProgram(const lmrt::plan::Plan &plan, const std::string &name) {
  for (const lmrt::plan::Program &program : plan.programs())
    if (program.name() == name)
      return &program;
  return nullptr;
}

TEST(CompileToPlan, CompilesASourceIntoAPlanWithCompiledCpuKernels) {
  ScratchDir cache;
  CompileToPlanOptions options;
  options.translation.sourcePath = "tiny.lm";
  options.kernels.cacheDir = cache.path.str().str();

  Compile cold;
  ASSERT_TRUE(succeeded(cold.run(kTinyModel, options))) << cold.diagnostics;
  ASSERT_TRUE(cold.result->plan.has_value());
  const lmrt::plan::Plan &plan = *cold.result->plan;
  EXPECT_EQ(plan.source(), "tiny.lm");
  EXPECT_EQ(plan.objective(), "causal_lm");
  EXPECT_EQ(plan.param_count(), 256 * 16 + 16 * 16 + 16);

  // The train step's steps: forward and backward, with the fused epilogue.
  const lmrt::plan::Program *train = findProgram(plan, "train_step");
  ASSERT_NE(train, nullptr);
  EXPECT_GT(train->steps_size(), 5);
  int fused = 0;
  for (const lmrt::plan::Step &step : train->steps())
    fused += step.op() == "fused";
  EXPECT_GT(fused, 0);
  EXPECT_NE(findProgram(plan, "eval"), nullptr);
  EXPECT_NE(findProgram(plan, "forward"), nullptr);

  // One library, for the CPU, compiled here: an image that matches its
  // checksum, the source it came from and the compiler's command line.
  ASSERT_GT(plan.kernels_size(), 0);
  ASSERT_EQ(plan.kernel_libraries_size(), 1);
  const lmrt::plan::KernelLibrary &lib = plan.kernel_libraries(0);
  EXPECT_EQ(lib.target(), "cpu-x86-64");
  EXPECT_FALSE(lib.image().empty());
  EXPECT_EQ(lib.image_fnv1a(), lmrt::fnv1a64(lib.image()));
  EXPECT_NE(lib.source().find("LMC_CPU_ENTRY"), std::string::npos);
  EXPECT_NE(lib.compiler().find("-shared"), std::string::npos);
  EXPECT_EQ(cold.result->kernels.compiledLibraries, 1u);
  EXPECT_EQ(cold.result->kernels.cachedLibraries, 0u);
  EXPECT_EQ(lmrt::contract::checkPlan(plan), "");
  EXPECT_EQ(cold.diagnostics, "");

  // The same source again: the same plan file, the library from the cache.
  Compile warm;
  ASSERT_TRUE(succeeded(warm.run(kTinyModel, options))) << warm.diagnostics;
  EXPECT_EQ(warm.result->kernels.compiledLibraries, 0u);
  EXPECT_EQ(warm.result->kernels.cachedLibraries, 1u);
  EXPECT_EQ(lmrt::encodePlan(*warm.result->plan), lmrt::encodePlan(plan));
}

TEST(CompileToPlan, CallsTheHooksAtEveryStageAndStopsWhereAsked) {
  ScratchDir cache;
  CompileToPlanOptions options;
  options.kernels.cacheDir = cache.path.str().str();
  std::vector<std::string> seen;
  options.afterStage = [&](CompileStage stage, ModuleOp module) {
    seen.push_back(getStageName(stage).str());
    return success();
  };
  bool pending = false;
  options.afterTranslation = [&](const lmrt::plan::Plan &plan) {
    // Translated, not yet compiled: the source is there, the image is not.
    seen.push_back("translation");
    pending = plan.kernel_libraries_size() == 1 && plan.kernel_libraries(0).image().empty() &&
              !plan.kernel_libraries(0).source().empty();
    return success();
  };

  Compile all;
  ASSERT_TRUE(succeeded(all.run(kTinyModel, options))) << all.diagnostics;
  EXPECT_EQ(seen, (std::vector<std::string>{"frontend", "autodiff", "optimize", "contract", "translation"}));
  EXPECT_TRUE(pending);

  seen.clear();
  options.compileTo = CompileTo::Pipeline;
  Compile toPipeline;
  ASSERT_TRUE(succeeded(toPipeline.run(kTinyModel, options))) << toPipeline.diagnostics;
  EXPECT_EQ(seen, (std::vector<std::string>{"frontend", "autodiff", "optimize", "contract"}));
  EXPECT_FALSE(toPipeline.result->plan.has_value());
  ASSERT_TRUE(toPipeline.result->module);
  EXPECT_TRUE(toPipeline.result->module->lookupSymbol("causal_lm_train_step"));

  seen.clear();
  options.compileTo = CompileTo::Frontend;
  Compile toFrontend;
  ASSERT_TRUE(succeeded(toFrontend.run(kTinyModel, options))) << toFrontend.diagnostics;
  EXPECT_EQ(seen, (std::vector<std::string>{"frontend"}));
  EXPECT_FALSE(toFrontend.result->module->lookupSymbol("causal_lm_train_step"));
}

TEST(CompileToPlan, ReportsASourceErrorAtItsLine) {
  std::string source = kTinyModel;
  source.replace(source.find("gelu(h @ w1"), 4, "gelo");
  Compile bad;
  EXPECT_TRUE(failed(bad.run(source, {})));
  EXPECT_NE(bad.diagnostics.find("tiny.lm:8:"), std::string::npos) << bad.diagnostics;
  EXPECT_NE(bad.diagnostics.find("error:"), std::string::npos) << bad.diagnostics;
  EXPECT_NE(bad.diagnostics.find("gelo"), std::string::npos) << bad.diagnostics;
}

TEST(CompileToPlan, ReportsAFailingCompilerByName) {
  ScratchDir cache;
  CompileToPlanOptions options;
  options.kernels.cacheDir = cache.path.str().str();
  options.kernels.cxx = "/bin/false";
  Compile broken;
  EXPECT_TRUE(failed(broken.run(kTinyModel, options)));
  EXPECT_NE(broken.diagnostics.find("error: codegen: compiling the generated kernels failed: 'false -std=c++17"),
            std::string::npos)
      << broken.diagnostics;
  EXPECT_NE(broken.diagnostics.find("exited with status 1"), std::string::npos) << broken.diagnostics;
}

TEST(CompileToPlan, ReportsAnUnknownExtensionPass) {
  CompileToPlanOptions options;
  std::string errors;
  llvm::raw_string_ostream os(errors);
  ASSERT_TRUE(succeeded(parseExtensionPasses("after-autodiff:cse,no-such-pass", options.pipeline, os)));
  Compile bad;
  EXPECT_TRUE(failed(bad.run(kTinyModel, options)));
  EXPECT_NE(bad.diagnostics.find("in the passes of extension point 'after-autodiff' ('cse,no-such-pass')"),
            std::string::npos)
      << bad.diagnostics;
  EXPECT_NE(bad.diagnostics.find("'no-such-pass' does not refer to a registered pass"), std::string::npos)
      << bad.diagnostics;
}

} // namespace

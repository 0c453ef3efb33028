//===- Frontend.cpp - .lm source to lm dialect ----------------------------===//
//
// emitModuleFromSource: parse (LMCFrontendSyntax), then MLIRGen, then the
// verifier. Syntax errors come out of the plain-C++ parser as (line, col,
// message) and are re-emitted here as MLIR diagnostics at FileLineColLocs of
// the main buffer, so a SourceMgrDiagnosticHandler shows them with a caret.
//
//===----------------------------------------------------------------------===//
#include "frontend/Frontend.h"

#include "dialect/IR/LMDialect.h"
#include "frontend/MLIRGen.h"
#include "frontend/Parser.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

namespace mlir::lm {

OwningOpRef<ModuleOp> emitModuleFromSource(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                                           const FrontendOptions &options) {
  context.loadDialect<LMDialect, func::FuncDialect>();
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  // The diagnostic handler finds the buffer to quote by this identifier.
  StringRef filename = buffer->getBufferIdentifier();

  std::optional<ast::Module> ast = parseModule(
      std::string_view(buffer->getBufferStart(), buffer->getBufferSize()),
      [&](ast::Loc loc, const std::string &message) {
        emitError(FileLineColLoc::get(&context, filename, loc.line, loc.col)) << message;
      });
  if (!ast)
    return nullptr;

  OwningOpRef<ModuleOp> module = MLIRGen(context, *ast, filename, options).run();
  if (!module)
    return nullptr;
  // The generator checks shapes before it builds each op, so a verifier
  // failure here is a frontend bug; it is still reported, not asserted.
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace mlir::lm

//===- Frontend.cpp - .lm source to lm dialect ----------------------------===//
//
// emitModuleFromSource: parse (LMCFrontendSyntax), resolve `import`s, then
// MLIRGen, then the verifier. Syntax errors come out of the plain-C++ parser
// as (line, col, message) and are re-emitted here as MLIR diagnostics at
// FileLineColLocs of their file, so a SourceMgrDiagnosticHandler shows them
// with a caret; imported files are added to the SourceMgr for that.
//
//===----------------------------------------------------------------------===//
#include "frontend/Frontend.h"

#include "dialect/IR/LMDialect.h"
#include "frontend/MLIRGen.h"
#include "frontend/Parser.h"

#include "base/file_io.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <set>

namespace mlir::lm {

namespace {

/// Parses the main file and every file it imports (transitively), merging the
/// imported blocks and models into the main module.
class Importer {
public:
  Importer(llvm::SourceMgr &sourceMgr, MLIRContext &context) : sourceMgr(sourceMgr), context(context) {}

  std::optional<ast::Module> run() {
    const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
    files.push_back(buffer->getBufferIdentifier().str());
    std::optional<ast::Module> main = parse(*buffer, 0);
    if (!main)
      return std::nullopt;
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(files[0], real))
      active.push_back(real.str().str());
    if (failed(resolve(*main, *main, 0)))
      return std::nullopt;
    return main;
  }

  std::vector<std::string> files;

private:
  llvm::SourceMgr &sourceMgr;
  MLIRContext &context;
  std::set<std::string> done;       ///< files imported already (by real path)
  std::vector<std::string> active;  ///< the chain of files being imported

  Location loc(ast::Loc l) { return FileLineColLoc::get(&context, files[l.file], l.line, l.col); }

  std::optional<ast::Module> parse(const llvm::MemoryBuffer &buffer, int file) {
    return parseModule(std::string_view(buffer.getBufferStart(), buffer.getBufferSize()),
                       [&](ast::Loc l, const std::string &message) { emitError(loc(l)) << message; },
                       file);
  }

  /// Imports the files `from` names into `into`.
  LogicalResult resolve(const ast::Module &from, ast::Module &into, int fromFile) {
    for (const ast::Import &imp : from.imports) {
      llvm::SmallString<256> path(imp.path);
      if (!llvm::sys::path::is_absolute(path)) {
        path = llvm::sys::path::parent_path(files[fromFile]);
        llvm::sys::path::append(path, imp.path);
      }
      llvm::SmallString<256> real;
      if (std::error_code ec = llvm::sys::fs::real_path(path, real))
        return emitError(loc(imp.loc)) << "cannot import \"" << imp.path << "\": " << path << ": "
                                       << ec.message();
      std::string key = real.str().str();
      if (std::find(active.begin(), active.end(), key) != active.end())
        return emitError(loc(imp.loc)) << "\"" << imp.path
                                       << "\" is already being imported: imports cannot form a cycle";
      if (!done.insert(key).second)
        continue; // imported already: its definitions are in
      // The reader every user file goes through (base/file_io.h): a regular
      // file only (a FIFO would block, /dev/zero never end), read to its end
      // (a /proc file's stat size is 0), at most kMaxSourceBytes.
      std::string text, error;
      if (!lmrt::readRegularFile(path.str().str(), "imported file", kMaxSourceBytes, text, error))
        return emitError(loc(imp.loc)) << "cannot import \"" << imp.path << "\": " << error;
      std::unique_ptr<llvm::MemoryBuffer> buffer = llvm::MemoryBuffer::getMemBufferCopy(text, path);
      int file = files.size();
      files.push_back(path.str().str());
      const llvm::MemoryBuffer *raw = buffer.get();
      sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
      std::optional<ast::Module> mod = parse(*raw, file);
      if (!mod)
        return failure();
      // `import "zoo.lm" { block encoder }`: the listed blocks and models, with
      // the file's blocks they may call, are taken; its config, presets,
      // objectives, train block and other models stay behind.
      if (!imp.items.empty()) {
        for (const ast::Import::Item &item : imp.items) {
          bool found = false;
          for (const ast::Function &fn : mod->functions)
            found = found || (fn.name == item.name && (fn.kind == ast::Function::Kind::Model) == item.model);
          if (!found) {
            std::string has;
            for (const ast::Function &fn : mod->functions)
              if (fn.kind != ast::Function::Kind::Objective)
                has += (has.empty() ? "" : ", ") + std::string(ast::kindName(fn.kind)) + " " + fn.name;
            return emitError(loc(item.loc)) << "\"" << imp.path << "\" has no " << (item.model ? "model" : "block")
                                            << " '" << item.name << "' (it defines " << (has.empty() ? "none" : has)
                                            << ")";
          }
        }
        active.push_back(key);
        if (failed(resolve(*mod, into, file)))
          return failure();
        active.pop_back();
        for (ast::Function &fn : mod->functions) {
          bool listed = false;
          for (const ast::Import::Item &item : imp.items)
            listed = listed || item.name == fn.name;
          if (fn.kind == ast::Function::Kind::Block || (fn.kind == ast::Function::Kind::Model && listed))
            into.functions.push_back(std::move(fn));
        }
        continue;
      }
      // Shared files hold reusable definitions; the importing file decides
      // the config, the objective and the training.
      if (mod->configLoc)
        return emitError(loc(*mod->configLoc))
               << "an imported file defines blocks and models only, not 'config' (to take a model file's "
                  "blocks and models and leave the rest, list them: import \""
               << imp.path << "\" { block NAME, model NAME })";
      if (mod->trainLoc)
        return emitError(loc(*mod->trainLoc)) << "an imported file defines blocks and models only, not 'train'";
      if (!mod->exports.empty())
        return emitError(loc(mod->exports[0].loc)) << "an imported file defines blocks and models only, not 'export'";
      if (!mod->presets.empty())
        return emitError(loc(mod->presets[0].loc)) << "an imported file defines blocks and models only, not 'preset'";
      for (const ast::Function &fn : mod->functions)
        if (fn.kind == ast::Function::Kind::Objective)
          return emitError(loc(fn.loc)) << "an imported file defines blocks and models only, not objective '"
                                        << fn.name << "'";
      active.push_back(key);
      if (failed(resolve(*mod, into, file)))
        return failure();
      active.pop_back();
      for (ast::Function &fn : mod->functions)
        into.functions.push_back(std::move(fn));
    }
    return success();
  }
};

} // namespace

/// The data inputs of the objectives (their arguments that are not parameters).
static SmallVector<std::pair<func::FuncOp, unsigned>> objectiveInputs(ModuleOp module) {
  SmallVector<std::pair<func::FuncOp, unsigned>> inputs;
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr("lm.objective"))
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (f.getArgAttr(i, "lm.input"))
          inputs.push_back({f, i});
  return inputs;
}

static std::string describeInput(func::FuncOp f, unsigned i) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "input '" << cast<StringAttr>(f.getArgAttr(i, "lm.input")).getValue() << "' " << f.getArgument(i).getType()
     << " of objective '" << f.getSymName() << "'";
  return text;
}

/// Data parallelism over D ranks: each rank's program is the global one on batch / D rows
/// of every global batch. The frontend elaborates the file again with the config constant
/// `batch` divided by D, so that every shape, reshape and constant that follows from the
/// batch is the local one (docs/distributed.md); -lm-data-parallel then averages the
/// gradients and the loss over the ranks. Returns the local module, or null after an
/// error naming the tensor and the mesh axis.
static OwningOpRef<ModuleOp> localiseBatch(OwningOpRef<ModuleOp> global, const ast::Module &ast,
                                           const std::vector<std::string> &files, const FrontendOptions &options,
                                           MLIRContext &context) {
  auto mesh = global->getOperation()->getAttrOfType<DictionaryAttr>("lm.mesh");
  if (!mesh)
    return global;
  int64_t ranks = cast<IntegerAttr>(mesh.get("data")).getInt();
  auto config = global->getOperation()->getAttrOfType<DictionaryAttr>("lm.config");
  auto batchAttr = config ? dyn_cast_or_null<IntegerAttr>(config.get("batch")) : IntegerAttr();
  if (ranks == 1) {
    // A mesh without a data axis (tensor parallelism alone) runs the whole
    // batch on every rank: the plan still records it as the global batch.
    if (batchAttr) {
      NamedAttrList attrs(mesh);
      attrs.set("global_batch", IntegerAttr::get(IntegerType::get(&context, 64), batchAttr.getInt()));
      global->getOperation()->setAttr("lm.mesh", attrs.getDictionary(&context));
    }
    return global;
  }
  SmallVector<std::pair<func::FuncOp, unsigned>> inputs = objectiveInputs(*global);
  if (inputs.empty()) {
    emitError(global->getLoc()) << "mesh data = " << ranks << ": data parallelism splits the objectives' inputs, "
                                << "and this file has no objective with inputs";
    return nullptr;
  }
  if (!batchAttr) {
    emitError(global->getLoc()) << "mesh data = " << ranks << ": data parallelism splits the config constant "
                                << "'batch' (the inputs' first dimension), which this file does not define";
    return nullptr;
  }
  int64_t batch = batchAttr.getInt();
  for (auto [f, i] : inputs) {
    auto type = cast<RankedTensorType>(f.getArgument(i).getType());
    if (type.getRank() == 0 || type.getDimSize(0) != batch) {
      emitError(f.getArgument(i).getLoc()) << describeInput(f, i) << ": data parallelism splits dimension 0 of "
                                            << "every input, which must be the config constant batch = " << batch;
      return nullptr;
    }
    if (batch % ranks != 0) {
      emitError(f.getArgument(i).getLoc())
          << describeInput(f, i) << ": dimension 0 (batch = " << batch << ") is not divisible by mesh axis 'data' ("
          << ranks << " ranks); choose a batch that is a multiple of " << ranks;
      return nullptr;
    }
  }
  FrontendOptions local = options;
  local.defines.emplace_back("batch", std::to_string(batch / ranks));
  OwningOpRef<ModuleOp> module = MLIRGen(context, ast, files, local).run();
  if (!module)
    return nullptr;
  for (auto [f, i] : objectiveInputs(*module))
    if (cast<RankedTensorType>(f.getArgument(i).getType()).getDimSize(0) != batch / ranks) {
      emitError(f.getArgument(i).getLoc()) << describeInput(f, i) << " keeps its first dimension with batch = "
                                            << batch / ranks << ": it must follow the config constant 'batch'";
      return nullptr;
    }
  NamedAttrList attrs(mesh);
  attrs.set("global_batch", IntegerAttr::get(IntegerType::get(&context, 64), batch));
  module->getOperation()->setAttr("lm.mesh", attrs.getDictionary(&context));
  return module;
}

OwningOpRef<ModuleOp> emitModuleFromSource(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                                           const FrontendOptions &options) {
  context.loadDialect<LMDialect, func::FuncDialect>();
  Importer importer(sourceMgr, context);
  std::optional<ast::Module> ast = importer.run();
  if (!ast)
    return nullptr;

  OwningOpRef<ModuleOp> module = MLIRGen(context, *ast, importer.files, options).run();
  if (!module)
    return nullptr;
  module = localiseBatch(std::move(module), *ast, importer.files, options, context);
  if (!module)
    return nullptr;
  // The generator checks shapes before it builds each op, so a verifier
  // failure here is a frontend bug; it is still reported, not asserted.
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace mlir::lm

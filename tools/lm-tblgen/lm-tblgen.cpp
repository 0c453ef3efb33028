//===- lm-tblgen.cpp - TableGen backends of the lm dialect ----------------===//
//
// mlir-tblgen plus the lm dialect's own backends (in the manner of IREE's
// VMOpTableGen): `-gen-lm-op-table` here, and `-gen-lm-elementwise-table`
// (ElementwiseTableGen.cpp, the scalar forms and builtins of the elementwise
// ops). `-gen-lm-op-table` reads dialect/IR/LMOps.td and writes the
// table of ops a plan step may run as plain C++ (no MLIR or LLVM includes), so
// the runtime, which links no MLIR, and lmc read the ops' names, operand and
// result counts and attributes from the ODS instead of restating them.
//
// A plan step op is an lm op without regions that is neither a terminator nor
// ConstantLike (constants become CONSTANT buffers, region ops are not kernels).
// Every step op must have a fixed number of operands and results and only
// attributes with a plan form (integer, float, bool, array<i64>); anything else
// is a build error naming the op, not a silently missing table entry.
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/Attribute.h"
#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using llvm::formatv;
using llvm::PrintFatalError;
using llvm::Record;
using llvm::RecordKeeper;
using llvm::StringRef;

namespace {

/// The plan form of one attribute: the `AttrKind` enumerator of
/// contract/op_table.h, and the default value as a C++ literal.
struct AttrRow {
  std::string name;
  StringRef kind;
  bool hasDefault = false;
  std::string defaultInt = "0";
  std::string defaultFloat = "0.0";
  bool defaultBool = false;
};

StringRef attrKind(const tblgen::Operator &op, const tblgen::NamedAttribute &named) {
  tblgen::Attribute attr = named.attr.getBaseAttr();
  StringRef storage = attr.getStorageType().trim();
  if (storage == "::mlir::BoolAttr")
    return "Bool";
  if (storage == "::mlir::IntegerAttr")
    return "Int";
  if (storage == "::mlir::FloatAttr")
    return "Float";
  if (storage == "::mlir::DenseI64ArrayAttr")
    return "IntList";
  PrintFatalError(op.getLoc(), formatv("attribute '{0}' of '{1}' is a {2}, which has no plan form "
                                       "(integer, float, bool, array<i64>)",
                                       named.name, op.getOperationName(), storage));
}

/// The ODS default is a C++ expression; the table needs a value, so only plain
/// literals are accepted.
void parseDefault(const tblgen::Operator &op, const tblgen::NamedAttribute &named, AttrRow &row) {
  StringRef text = named.attr.getDefaultValue().trim();
  auto fail = [&] {
    PrintFatalError(op.getLoc(), formatv("default '{0}' of attribute '{1}' of '{2}' is not a {3} literal", text,
                                         named.name, op.getOperationName(), row.kind));
  };
  row.hasDefault = true;
  if (row.kind == "Bool") {
    if (text != "true" && text != "false")
      fail();
    row.defaultBool = text == "true";
  } else if (row.kind == "Int") {
    int64_t value;
    if (text.getAsInteger(10, value))
      fail();
    row.defaultInt = std::to_string(value);
  } else if (row.kind == "Float") {
    // Checked to be a finite number, then written as ODS spells it (a valid
    // C++ literal: "1e-5" stays readable in the generated table).
    double value;
    if (text.getAsDouble(value) || !std::isfinite(value))
      fail();
    row.defaultFloat = text.str();
  } else {
    fail(); // integer lists have no literal default in the table
  }
}

bool isStepOp(const tblgen::Operator &op) {
  return op.getNumRegions() == 0 && !op.getTrait("::mlir::OpTrait::IsTerminator") &&
         !op.getTrait("::mlir::OpTrait::ConstantLike");
}

bool emitOpTable(const RecordKeeper &records, llvm::raw_ostream &os) {
  llvm::emitSourceFileHeader("The lm ops a plan step may run (see contract/op_table.h)", os, records);
  // Sorted by op name, so the table does not depend on the records' def names.
  std::vector<const Record *> defs;
  for (const Record *def : records.getAllDerivedDefinitions("Op")) {
    tblgen::Operator op(def);
    if (op.getDialectName() == "lm" && isStepOp(op))
      defs.push_back(def);
  }
  std::sort(defs.begin(), defs.end(), [](const Record *a, const Record *b) {
    return tblgen::Operator(a).getOperationName() < tblgen::Operator(b).getOperationName();
  });

  std::string table;
  llvm::raw_string_ostream tableOs(table);
  for (const Record *def : defs) {
    tblgen::Operator op(def);
    std::string name = op.getOperationName().substr(std::string("lm.").size());
    if (op.getNumVariableLengthOperands() || op.getNumVariableLengthResults())
      PrintFatalError(op.getLoc(), "'" + op.getOperationName() +
                                       "' has variadic or optional operands or results; a plan step has fixed arity");
    std::vector<AttrRow> rows;
    for (const tblgen::NamedAttribute &named : op.getAttributes()) {
      if (named.attr.isDerivedAttr())
        continue;
      AttrRow row;
      row.name = named.name.str();
      row.kind = attrKind(op, named);
      if (named.attr.hasDefaultValue())
        parseDefault(op, named, row);
      else if (named.attr.isOptional())
        PrintFatalError(op.getLoc(), formatv("attribute '{0}' of '{1}' is optional without a default; a plan "
                                             "step carries every attribute or its default",
                                             named.name, op.getOperationName()));
      rows.push_back(row);
    }
    std::string attrs = "nullptr";
    if (!rows.empty()) {
      attrs = "kAttrs_" + name;
      os << "static const AttrInfo " << attrs << "[] = {\n";
      for (const AttrRow &row : rows)
        os << formatv("    {{\"{0}\", AttrKind::{1}, {2}, {3}, {4}, {5}},\n", row.name, row.kind,
                      row.hasDefault ? "true" : "false", row.defaultInt, row.defaultFloat,
                      row.defaultBool ? "true" : "false");
      os << "};\n";
    }
    // LM_UpdatesStateInPlace: the step's output may be the STATE buffer it reads as input 0.
    bool inPlace = op.getTrait("::mlir::OpTrait::lm::UpdatesStateInPlace") != nullptr;
    if (inPlace && (op.getNumOperands() < 1 || op.getNumResults() != 1))
      PrintFatalError(op.getLoc(), "'" + op.getOperationName() +
                                       "' updates state in place, so it needs a first operand and one result");
    // LM_MayOverwriteOperand0: the step's output 0 may be the buffer it reads as input 0.
    bool overwrites = op.getTrait("::mlir::OpTrait::lm::MayOverwriteOperand0") != nullptr;
    if (overwrites && (op.getNumOperands() < 1 || op.getNumResults() < 1))
      PrintFatalError(op.getLoc(), "'" + op.getOperationName() +
                                       "' may overwrite operand 0, so it needs a first operand and a result");
    tableOs << formatv("    {{\"{0}\", {1}, {2}, {3}, {4}, {5}, {6}},\n", name, op.getNumOperands(),
                       op.getNumResults(), attrs, rows.size(), inPlace ? "true" : "false",
                       overwrites ? "true" : "false");
  }
  os << "\nstatic const OpInfo kGeneratedOps[] = {\n" << table << "};\n";
  return false;
}

mlir::GenRegistration genOpTable("gen-lm-op-table",
                                 "Generate the plan step op table of the lm dialect as plain C++", emitOpTable);

} // namespace

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }

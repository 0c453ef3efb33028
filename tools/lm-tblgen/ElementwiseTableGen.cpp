//===- ElementwiseTableGen.cpp - The elementwise table of the lm dialect --===//
//
// `-gen-lm-elementwise-table` reads dialect/IR/LMOps.td and writes, for every
// op with a scalar form (LM_ElementwiseOpInterface, whose form the ODS states
// with LM_ScalarForm), two sections of plain C++ (no MLIR or LLVM includes):
//
//   GET_ELEMENTWISE_FORMS  one functor per op, `f` being the scalar form as C++
//                          over contract/scalar_math.h ($0 -> x0, ...), for the
//                          CPU and CUDA kernel templates (contract/elementwise_forms.h);
//   GET_ELEMENTWISE_ROWS   one row per op: name, arity, operand names, shape
//                          rule, scalar form text and, for an LM_Builtin, the
//                          .lm builtin's name and argument names (contract/elementwise.h).
//
// So an elementwise op's name and math are stated once, in the ODS, and its
// kernels and builtin follow from there. Whatever the table cannot carry (an
// attribute, several results, a form naming a missing operand) is a build
// error naming the op, not a kernel that computes something else.
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <algorithm>
#include <set>

using namespace mlir;
using llvm::formatv;
using llvm::PrintFatalError;
using llvm::Record;
using llvm::RecordKeeper;
using llvm::StringRef;

namespace {

constexpr const char *kInterfaceTrait = "::mlir::lm::ElementwiseOpInterface::Trait";

/// One elementwise op, as the two sections need it.
struct Row {
  std::string name;    // mnemonic: "log_sigmoid"
  std::string functor; // "LogSigmoid"
  int arity = 0;
  bool broadcasts = false;
  std::string form;      // as in the ODS: "lmc::logSigmoid($0)"
  std::string code;      // as C++ over x0, x1, ...: "lmc::logSigmoid(x0)"
  std::vector<bool> used; // operand k appears in the form
  std::vector<std::string> operands, params;
  std::string builtin; // "" when the language does not call the op by name
};

StringRef field(const Record &def, StringRef name) {
  const llvm::RecordVal *value = def.getValue(name);
  return value ? def.getValueAsString(name) : StringRef();
}

/// The scalar form with $k replaced by xk; every $k must name an operand. One
/// digit after '$', as the kernel emitter (codegen/KernelEmitter.cpp) reads it.
std::string formAsCode(const tblgen::Operator &op, Row &row) {
  std::string code;
  row.used.assign(row.arity, false);
  for (size_t i = 0; i < row.form.size(); ++i) {
    char c = row.form[i];
    if (c != '$') {
      code += c;
      continue;
    }
    if (i + 1 >= row.form.size() || !llvm::isDigit(row.form[i + 1]))
      PrintFatalError(op.getLoc(), formatv("the scalar form '{0}' of '{1}' has a '$' that is not $0, $1, ...",
                                         row.form, op.getOperationName()));
    int k = row.form[++i] - '0';
    if (k >= row.arity)
      PrintFatalError(op.getLoc(), formatv("the scalar form '{0}' of '{1}' names ${2}, but the op has {3} operands",
                                           row.form, op.getOperationName(), k, row.arity));
    row.used[k] = true;
    code += "x" + std::to_string(k);
  }
  return code;
}

Row makeRow(const Record &def, const tblgen::Operator &op) {
  Row row;
  row.name = op.getOperationName().substr(std::string("lm.").size());
  row.functor = llvm::convertToCamelFromSnakeCase(row.name, /*capitalizeFirst=*/true);
  row.arity = op.getNumOperands();
  row.broadcasts = def.getValueAsBit("operandsBroadcast");
  row.form = field(def, "scalarForm").str();
  std::string where = "'" + op.getOperationName() + "' has a scalar form, so ";
  if (op.getNumVariableLengthOperands() || op.getNumResults() != 1 || op.getNumVariableLengthResults())
    PrintFatalError(op.getLoc(), where + "it needs a fixed number of operands and one result");
  if (row.arity < 1)
    PrintFatalError(op.getLoc(), where + "it needs an operand");
  if (row.broadcasts && row.arity < 2)
    PrintFatalError(op.getLoc(), where + "its one operand has nothing to broadcast with");
  for (const tblgen::NamedAttribute &named : op.getAttributes())
    if (!named.attr.isDerivedAttr())
      PrintFatalError(op.getLoc(), where + "it cannot have attributes ('" + named.name.str() +
                                       "'): the scalar form is all its kernels compute");
  row.code = formAsCode(op, row);
  for (int k = 0; k < row.arity; ++k)
    row.operands.push_back(op.getOperand(k).name.str());

  row.builtin = field(def, "builtinName").str();
  if (!row.builtin.empty()) {
    for (StringRef p : def.getValueAsListOfStrings("builtinParams"))
      row.params.push_back(p.str());
    if (row.params.empty())
      row.params = row.operands;
    if ((int)row.params.size() != row.arity)
      PrintFatalError(op.getLoc(), formatv("builtin '{0}' of '{1}' names {2} arguments, but the op has {3} "
                                           "operands",
                                           row.builtin, op.getOperationName(), row.params.size(), row.arity));
  }
  return row;
}

std::string quoted(StringRef s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << '"';
  os.write_escaped(s);
  os << '"';
  return out;
}

std::string list(const std::vector<std::string> &items) {
  std::string out;
  for (const std::string &item : items)
    out += (out.empty() ? "" : ", ") + quoted(item);
  return "{" + out + "}";
}

void emitForms(const std::vector<Row> &rows, llvm::raw_ostream &os) {
  os << "#ifdef GET_ELEMENTWISE_FORMS\n#undef GET_ELEMENTWISE_FORMS\n\n";
  for (const Row &row : rows) {
    std::string params;
    for (int k = 0; k < row.arity; ++k)
      params += formatv("{0}A {1}x{2}{3}", k ? ", " : "", row.used[k] ? "" : "/*", k, row.used[k] ? "" : "*/");
    os << formatv("/// lm.{0}: {1}\n", row.name, row.form);
    os << "struct " << row.functor << " {\n";
    os << "  static constexpr const char *name = " << quoted(row.name) << ";\n";
    os << "  static constexpr int arity = " << row.arity << ";\n";
    os << "  static constexpr bool broadcasts = " << (row.broadcasts ? "true" : "false") << ";\n";
    os << "  static constexpr const char *operands[] = " << list(row.operands) << ";\n";
    os << "  template <typename A> static LMC_HD A f(" << params << ") { return " << row.code << "; }\n";
    os << "};\n\n";
  }
  os << "/// Every functor above, for kernel templates that instantiate one kernel per op.\n";
  os << "using All = List<";
  for (size_t i = 0; i < rows.size(); ++i)
    os << (i ? ", " : "") << rows[i].functor;
  os << ">;\n\n#endif // GET_ELEMENTWISE_FORMS\n\n";
}

void emitRows(const std::vector<Row> &rows, llvm::raw_ostream &os) {
  os << "#ifdef GET_ELEMENTWISE_ROWS\n#undef GET_ELEMENTWISE_ROWS\n\n";
  for (const Row &row : rows) {
    os << "static const char *const kOperands_" << row.name << "[] = " << list(row.operands) << ";\n";
    if (!row.builtin.empty())
      os << "static const char *const kParams_" << row.name << "[] = " << list(row.params) << ";\n";
  }
  os << "\nstatic const ElementwiseOp kGeneratedElementwiseOps[] = {\n";
  for (const Row &row : rows) {
    bool builtin = !row.builtin.empty();
    os << formatv("    {{{0}, {1}, {2}, {3}, kOperands_{4}, {5}, {6}},\n", quoted(row.name), row.arity,
                  row.broadcasts ? "true" : "false", quoted(row.form), row.name,
                  builtin ? quoted(row.builtin) : "nullptr", builtin ? "kParams_" + row.name : "nullptr");
  }
  os << "};\n\n#endif // GET_ELEMENTWISE_ROWS\n";
}

bool emitElementwiseTable(const RecordKeeper &records, llvm::raw_ostream &os) {
  llvm::emitSourceFileHeader("The lm ops with a scalar form (see contract/elementwise.h)", os, records);
  std::vector<Row> rows;
  std::set<std::string> functors, builtins;
  for (const Record *def : records.getAllDerivedDefinitions("Op")) {
    tblgen::Operator op(def);
    if (op.getDialectName() != "lm")
      continue;
    bool elementwise = op.getTrait(kInterfaceTrait) != nullptr;
    bool hasForm = !field(*def, "scalarForm").empty();
    if (elementwise != hasForm)
      PrintFatalError(op.getLoc(), "'" + op.getOperationName() + "' " +
                                       (elementwise ? "is an ElementwiseOpInterface op without a scalar form "
                                                      "(LM_ScalarForm)"
                                                    : "has a scalar form but not the ElementwiseOpInterface"));
    if (!field(*def, "builtinName").empty() && !elementwise)
      PrintFatalError(op.getLoc(), "'" + op.getOperationName() +
                                       "' is an LM_Builtin without a scalar form: only elementwise ops are "
                                       "builtins of the table");
    if (!elementwise)
      continue;
    Row row = makeRow(*def, op);
    if (!functors.insert(row.functor).second)
      PrintFatalError(op.getLoc(), "'" + op.getOperationName() + "' gives a second functor named " + row.functor);
    if (!row.builtin.empty() && !builtins.insert(row.builtin).second)
      PrintFatalError(op.getLoc(), "'" + op.getOperationName() + "' is a second op for builtin '" + row.builtin + "'");
    rows.push_back(std::move(row));
  }
  // Sorted by op name, so the table does not depend on the records' def names.
  std::sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) { return a.name < b.name; });
  emitForms(rows, os);
  emitRows(rows, os);
  return false;
}

mlir::GenRegistration genElementwiseTable("gen-lm-elementwise-table",
                                          "Generate the table of the lm dialect's elementwise ops (scalar forms "
                                          "and builtins) as plain C++",
                                          emitElementwiseTable);

} // namespace

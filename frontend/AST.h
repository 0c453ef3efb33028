//===- AST.h - Abstract syntax tree of the .lm language ---------*- C++ -*-===//
//
// The tree the parser builds and MLIRGen walks. Plain C++ (no LLVM/MLIR), so
// the lexer, parser and this tree are unit-testable on their own, like the
// Toy tutorial's Ch1. Every node carries the position of its first token.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::lm::ast {

/// A 1-based line and column in the source buffer.
struct Loc {
  int line = 0;
  int col = 0;
  int file = 0; ///< which source: 0 the main file, else an imported one
};

/// `line:col`, for messages that point at a second position.
std::string at(Loc loc);

/// How deep an expression may nest. The parser rejects deeper ones, since
/// every pass over the tree (evaluation, printing, destruction) recurses.
constexpr int kMaxExprNesting = 256;

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// A keyword argument of a call: `heads = 4`.
struct KeywordArg {
  Loc loc;
  std::string name;
  ExprPtr value;
};

/// One subscript of an index expression: either a single index `i` or a slice
/// `start:limit:step` with each part optional.
struct Subscript {
  Loc loc;
  bool isSlice = false;
  ExprPtr index; ///< Set when !isSlice.
  ExprPtr start, limit, step;
};

/// An expression. A tagged struct rather than a class hierarchy: the language
/// has few node kinds and MLIRGen switches over all of them.
struct Expr {
  enum class Kind {
    Int,     ///< 42
    Float,   ///< 0.02, 6e-4
    Bool,    ///< true, false
    Name,    ///< x, d, zeros
    Unary,   ///< -x
    Binary,  ///< x + y, x @ w
    Call,    ///< f(a, b, key = c)
    Index,   ///< x[:, 1:], x[0]
    List,    ///< [0, 2, 1]
    Tuple,   ///< (0.9, 0.95)
    String,  ///< "ln_1" (the value in `name`)
  };
  Kind kind;
  Loc loc;

  int64_t intValue = 0;    ///< Int
  double floatValue = 0.0; ///< Float
  bool boolValue = false;  ///< Bool
  std::string name;        ///< Name, and the callee of Call
  /// Unary: '-' or '+'; Binary: + - * / @, and the comparisons < > and
  /// 'l' (<=), 'g' (>=), 'e' (==), 'n' (!=) (see opSpelling).
  char op = 0;
  ExprPtr lhs, rhs;        ///< Unary (lhs only), Binary; Index base in lhs
  std::vector<ExprPtr> args;     ///< Call positional args; List/Tuple items
  std::vector<KeywordArg> kwargs; ///< Call keyword args
  std::vector<Subscript> subscripts; ///< Index
  /// Levels of the tree under this node, itself included (1 for a leaf); the
  /// parser keeps it at most kMaxExprNesting.
  int height = 1;

  Expr(Kind kind, Loc loc) : kind(kind), loc(loc) {}
};

/// Renders an expression back to source-like text (tests, error messages).
std::string toString(const Expr &expr);

/// The source spelling of a binary operator code of Expr::op ("<=" for 'l').
std::string opSpelling(char op);
/// True for the comparison codes < > l g e n.
bool isComparison(char op);

//===----------------------------------------------------------------------===//
// Types, statements and definitions
//===----------------------------------------------------------------------===//

/// `f32[B, T, d]`: an element type name and one expression per dimension.
struct TypeExpr {
  Loc loc;
  std::string elementType; ///< "f32" or "i32" (checked by MLIRGen)
  std::vector<ExprPtr> dims;
};

/// A parameter of a block, model or objective: `x: f32[B, T, d]` or an
/// untyped `x`, which takes whatever the call passes.
struct Parameter {
  Loc loc;
  std::string name;
  std::optional<TypeExpr> type;
};

struct Stmt {
  enum class Kind {
    Assign, ///< name = value
    Param,  ///< param name: [dims] = init
    Return, ///< return value
    Metric, ///< metric name = value (objectives: a scalar reported by evaluation)
  };
  Kind kind;
  Loc loc;
  std::string name;     ///< Assign, Param, Metric
  Loc nameLoc;          ///< Assign, Param, Metric
  /// Assign of several names (`q, k = split(x)`): every name and its
  /// position; empty for a single name.
  std::vector<std::string> names;
  std::vector<Loc> nameLocs;
  TypeExpr paramShape;  ///< Param (elementType empty when written `[dims]`)
  ExprPtr value;        ///< Assign value, Param initializer, Return value
  /// Param written `frozen param ...`: excluded from gradients and the optimizer.
  bool frozen = false;

  Stmt(Kind kind, Loc loc) : kind(kind), loc(loc) {}
};

/// `name = value` inside `config { }` or `train { }`.
struct Setting {
  Loc loc;
  std::string name;
  ExprPtr value;
};

/// A `block`, `model` or `objective` definition.
struct Function {
  enum class Kind { Block, Model, Objective };
  Kind kind;
  Loc loc;
  std::string name;
  Loc nameLoc;
  std::vector<Parameter> params;
  std::optional<TypeExpr> resultType;
  std::vector<Stmt> body;
  Loc closeLoc; ///< The closing `}` (where "missing return" points).
};

/// `import "path.lm"`: the blocks and models of another file.
struct Import {
  Loc loc;
  std::string path; ///< as written, relative to the importing file
  /// `import "f.lm" { block a, model b }`: the blocks and models taken from a file
  /// that may also hold a config, presets, objectives and a train block (a zoo
  /// model), which stay behind. Empty: the whole file, which must hold none.
  struct Item {
    Loc loc;
    bool model = false;
    std::string name;
  };
  std::vector<Item> items;
};

/// `preset name { setting* [train { setting* }] }`: config values selected by
/// `--preset name`, and train options that replace the train section's of the
/// same name (a preset on another optimizer than the paper's config).
struct Preset {
  Loc loc;
  std::string name;
  std::vector<Setting> settings;
  std::vector<Setting> train;
  std::optional<Loc> trainLoc;
};

/// One rule of an `export` section:
/// `"layer.{i}.attn.wq" -> "model.layers.{i}.self_attn.q_proj.weight" transpose`.
struct ExportRule {
  Loc loc;
  /// A parameter path; each `{name}` in it matches a decimal index.
  std::string pattern;
  /// The foreign name(s), using the pattern's `{name}`s (several: written to each).
  std::vector<std::string> targets;
  bool transpose = false;
  /// `tied "lm_head.weight"`: names the framework ties to the first target and
  /// leaves out of its files (not written; checked equal on import if present).
  std::vector<std::string> tied;
  /// `omit "sbo.bias"`: the parameters the pattern matches have no foreign name
  /// (the model class lacks them); no targets.
  bool omit = false;
};

/// `export hf "GPT2LMHeadModel" { config { setting* } rule* }`: how the
/// parameters map onto another framework's names (docs/language.md).
struct Export {
  Loc loc;
  std::string format;       ///< "hf"
  Loc formatLoc;
  std::string architecture; ///< the foreign model class
  std::vector<Setting> config;
  std::vector<ExportRule> rules;
};

/// A whole `.lm` file.
struct Module {
  std::vector<Import> imports;
  std::vector<Preset> presets;
  /// The `config { }` settings in order (empty when there is no config).
  std::vector<Setting> config;
  std::optional<Loc> configLoc;
  /// The `train { }` settings in order.
  std::vector<Setting> train;
  std::optional<Loc> trainLoc;
  /// Blocks, models and objectives in source order.
  std::vector<Function> functions;
  /// `export` sections, in source order.
  std::vector<Export> exports;

  const Function *lookup(const std::string &name) const;
};

const char *kindName(Function::Kind kind);

} // namespace mlir::lm::ast

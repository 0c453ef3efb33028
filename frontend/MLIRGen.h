//===- MLIRGen.h - Emission of lm ops from the .lm AST ----------*- C++ -*-===//
//
// The generator behind emitModuleFromSource (internal to the frontend). It
// interprets the AST at compile time: config constants and shape expressions
// are evaluated, blocks are inlined at every call (each call a fresh set of
// parameters in its own name scope), `repeat` is unrolled, and only tensor
// computation becomes lm ops. The methods are split over
//   MLIRGen.cpp   functions, statements, calls, parameters and naming
//   EmitExpr.cpp  expressions: arithmetic, matmul, indexing
//   Builtins.cpp  embed, layernorm, attention, ... and repeat
//   BuiltinsMath.cpp  the zoo's math: tanh ... cos, comparisons, where,
//                 sum/mean/max, concat, rmsnorm, arange
//   Settings.cpp  config (with presets and -D overrides), train and data attributes
//   Export.cpp    `export` sections: the lm.exports name maps, checked against the parameters
// Calls that declare parameters open a scope named by `name = "..."` or after
// the callee, once per scope (callScope), so parameter paths never depend on
// call order; errors inside blocks carry the call chain as notes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/AST.h"
#include "frontend/Frontend.h"
#include "frontend/LMValue.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlir::lm {

/// The names visible in one inlined body (one call of a block or model, or
/// an objective) and the parameter scope that body declares into.
/// A parameter-name pattern of the train block (ParamGroups.cpp): `*` matches any
/// run of characters, dots included, `?` any one; the whole name must match.
bool globMatch(const std::string &pattern, const std::string &name);

struct Env {
  const ast::Function *fn = nullptr; ///< null while evaluating config/train
  std::map<std::string, LMValue> vars;
  std::set<std::string> dimVars;     ///< names bound from argument shapes
  std::map<std::string, ast::Loc> paramDecls; ///< `param` statements run here
  /// Hierarchical prefix of the parameters declared here ("" at top level,
  /// "layer.0.attn" inside the attn call of the first repeated layer).
  std::string scope;
  /// The parameter scopes opened here so far (`attn`, `ln_1`) and where:
  /// each call that declares parameters opens one, named by `name = "..."`
  /// or after its callee, and a name is used once per scope.
  std::map<std::string, ast::Loc> scopes;
  /// Set inside a block called a second time in one scope without a name:
  /// fine while it declares no parameters (a helper like `rope`), an error at
  /// its first `param` (whose path would depend on call order).
  struct UnnamedRepeat {
    ast::Loc call, first;
    std::string callee;
  };
  std::optional<UnnamedRepeat> unnamedRepeat;
  /// Set while inlining a model a second time into the same function: its
  /// parameters are looked up instead of declared (a model owns its weights).
  bool reuseParams = false;
  /// Set inside a call written with `shared = true`: a parameter whose path
  /// another model of this function declared already is that parameter
  /// (ELECTRA's generator and discriminator share the embeddings).
  bool shareExisting = false;
  /// Set inside a call written with `frozen = true`: every parameter declared
  /// here (and in the calls it makes) is frozen (`lm.frozen`).
  bool frozen = false;
};

/// The keywords every call that declares parameters takes besides its own
/// arguments: `name = "..."` (nameArg), `shared = true` and `frozen = true`.
struct CallFlags {
  /// `shared = true`: a call whose scope name is already used reuses the
  /// parameters declared there; `repeat` gives all copies one set.
  bool shared = false;
  bool frozen = false;
};

/// The shapes and compile-time arguments a model is called with, which its own
/// function is emitted for.
struct ModelSpec {
  std::vector<LMValue> args; ///< tensors keep only their type (in argTypes)
  std::vector<RankedTensorType> argTypes; ///< null for compile-time arguments
  ast::Loc callLoc;
};

class MLIRGen {
public:
  /// `files` names the sources by their index in ast::Loc::file (the main
  /// file first, then the imported ones).
  MLIRGen(MLIRContext &context, const ast::Module &module, std::vector<std::string> files,
          const FrontendOptions &options);

  /// Emits the whole module; nullptr after an error has been reported.
  OwningOpRef<ModuleOp> run();

private:
  //--- State ------------------------------------------------------------------
  MLIRContext &ctx;
  const ast::Module &ast;
  /// The train options in effect: the train section's, each replaced by the
  /// selected preset's `train { }` option of the same name, then the preset's
  /// others (set by evalConfig, read wherever the train section is).
  std::vector<const ast::Setting *> trainSettings;
  std::vector<std::string> files;
  const FrontendOptions &options;
  OpBuilder builder;
  ModuleOp module;
  FloatType floatType;

  /// Resolved config constants in source order (Int or Float values).
  std::vector<std::pair<std::string, LMValue>> config;

  /// The function being emitted.
  struct FuncState {
    func::FuncOp op;
    Block *entry = nullptr;
    bool isObjective = false;
    struct Param {
      BlockArgument arg;
      ast::Loc loc;
      bool frozen = false;
    };
    std::map<std::string, Param> params;
    std::set<std::string> inlinedModels;
    std::vector<DictionaryAttr> argAttrs;
    /// An objective's `metric name = expr` scalars, in source order: results
    /// after the loss, each with its `lm.metric` name.
    struct Metric {
      std::string name;
      Value value;
      ast::Loc loc;
    };
    std::vector<Metric> metrics;
    /// The `dropout_key` input (i32[rows, 2]), added by the first dropout, and
    /// the sites numbered so far (each dropout's place in the program).
    Value dropoutKey;
    int64_t dropoutSites = 0;
  };
  FuncState *cur = nullptr;
  /// Blocks and models being inlined (to reject recursion).
  std::vector<const ast::Function *> callStack;
  /// Where each entry of callStack was called (errors inside a block show
  /// the chain of calls that led there as notes).
  std::vector<ast::Loc> callLocs;
  std::map<std::string, ModelSpec> modelSpecs;

  /// Set while a model is elaborated a further time for incremental decoding
  /// (MLIRDecode.cpp): `pos` is the run-time offset, and causal attention reads
  /// and extends key/value caches, function arguments and results that the
  /// plan keeps as STATE buffers (docs/plan-format.md).
  struct DecodeState {
    Value offset;          ///< the i32[] offset argument
    int64_t window = 0;    ///< positions a cache holds (the forward program's T)
    int64_t maxOffset = 0; ///< the largest offset: window - new tokens
    bool usedPos = false;
    bool notCausal = false; ///< met attention without causal = true
    int64_t attentions = 0;
    struct Cache {
      std::string name;
      Value updated; ///< the cache after this step's rows (a function result)
    };
    std::vector<Cache> caches;
    /// The caches' names: a 1,000-layer model looked each new name up in the list.
    llvm::StringSet<> cacheNames;
    //--- encoder-decoder models (emitSeq2SeqDecodePrograms) ---
    /// The elaboration of an encoder-decoder model: attention whose keys and
    /// values do not depend on the decoded tokens (the cross-attention) reads
    /// them from states that @<model>.encode writes once.
    bool seq2seq = false;
    /// @<model>.encode: the cross-attention keys and values written into
    /// their states; no cache of the decoder's, nothing decoded.
    bool encode = false;
    /// The decoded tokens' argument (what a decode program's new tokens are).
    Value tokens;
    /// Whether a value depends on `tokens` (dependsOnTokens' memo).
    llvm::DenseMap<Value, bool> onTokens;
    /// Why the elaboration failed, when it should be said (a warning).
    std::string why;
    /// Arguments the elaboration reads but the function must not keep (the
    /// encoder's ids in prefill and decode, the decoder's in encode).
    SmallVector<BlockArgument> placeholders;
  };
  DecodeState *decode = nullptr;

  //--- MLIRGen.cpp --------------------------------------------------------------
public:
  Location loc(ast::Loc l);
  InFlightDiagnostic error(ast::Loc l);

private:
  LogicalResult checkDefinitions();
  LogicalResult emitObjective(const ast::Function &fn);
  /// The objective's dropout_key input for a tensor of dims `x` (its first dim
  /// the rows), added on first use; an error at `l` if x has no rows or other
  /// rows than the key's.
  FailureOr<Value> dropoutKey(ArrayRef<int64_t> x, ast::Loc l);
  /// dropout(x, p, shared = true): one mask over all of x (of dims `dims`, no
  /// batch dimension: a parameter table) for the whole batch, drawn from the
  /// rows of the objective's dropout key: x flattened to [rows, n / rows],
  /// lm.dropout, and back. An error at `l` if the rows do not divide x.
  FailureOr<LMValue> emitSharedDropout(Value x, ArrayRef<int64_t> dims, double p, ast::Loc l);
  LogicalResult emitModel(const ast::Function &fn, const ModelSpec *spec);
  //--- MLIRDecode.cpp -----------------------------------------------------------
  /// Emits @<model>.prefill and @<model>.decode for a causal model whose
  /// forward function `forward` was emitted (no-op, or a warning, otherwise).
  void emitDecodePrograms(const ast::Function &fn, func::FuncOp forward);
  /// One of them: `tokens` new positions at the offset (lm.prefill or lm.decode).
  /// False (nothing left in the module) when the model cannot be decoded; the
  /// reason, if one should be shown, in `why`.
  bool emitDecodeFunction(const ast::Function &fn, int64_t window, int64_t tokens, StringRef kind,
                          std::string &why);
  /// An encoder-decoder model's (forward reading ids [B, T], attention_mask
  /// [B, T] and decoder_ids [B, S]): @<model>.encode and the decoder's
  /// @<model>.prefill and @<model>.decode (docs/language.md §12).
  void emitSeq2SeqDecodePrograms(const ast::Function &fn, func::FuncOp forward);
  /// One of them (kind "encode", "prefill" or "decode"); S is the window, T
  /// the encoder's rows, maskType the attention mask's row type.
  bool emitSeq2SeqFunction(const ast::Function &fn, int64_t window, int64_t encoderSeq, RankedTensorType maskType,
                           int64_t tokens, StringRef kind, std::string &why);
  /// The i32[] input "offset", bounded by the offsets the new tokens fit at.
  void addOffsetInput(FuncState &state, DecodeState &ds, const ast::Function &fn);
  /// Erases the ops nothing returned reads, then the unused parameters and
  /// placeholders; fails (ds.why) when a placeholder is still read.
  LogicalResult pruneDecodeFunction(FuncState &state, DecodeState &ds);
  /// Declares the arguments of `fn`'s elaboration, runs it and finishes the
  /// function (the shared part of emitDecodeFunction and emitSeq2SeqFunction).
  bool finishDecodeFunction(const ast::Function &fn, FuncState &state, DecodeState &ds, std::vector<LMValue> args,
                            std::vector<ast::Loc> argLocs, std::string &firstError, std::string &why);
public:
  /// Attention in a decode program: the new k and v written into the caches at
  /// the offset, the queries attending over them (lm.cached_attention).
  FailureOr<Value> emitCachedAttention(Env &env, ast::Loc l, Value q, Value k, Value v, int64_t heads,
                                       int64_t kvHeads);
  /// lm.biased_attention in a decode or encode function (T5's attention):
  /// the encoder's attention as in the forward program, the cross-attention
  /// over the encoder's keys and values (states), causal self-attention over
  /// key/value caches with the bias of the new positions' rows
  /// (MLIRDecode.cpp). `bias`, `mask`, `segments` and `key` as
  /// emitBiasedAttention passes them (rank-0: absent).
  FailureOr<Value> emitDecodedBiasedAttention(Env &env, ast::Loc l, Value qkv[3], Value mask, bool hasMask,
                                              Value bias, Value segments, bool hasSegments, Value key, int64_t heads,
                                              bool causal, int64_t kvHeads, double scale);
  /// Whether `v` depends on the decoded tokens (DecodeState::tokens).
  bool dependsOnTokens(Value v);
  /// A cache [1, W, D] of `x` [1, C, D] written at the offset (a state argument and result).
  Value addDecodeCache(Location where, Value x, const std::string &name);
  DecodeState *decodeState() { return decode; }

private:
  void beginFunction(FuncState &state, const ast::Function &fn);
  /// Returns `results` (then the metrics); `outputNames`, when given, become
  /// the results' `lm.output` names (a model returning several values).
  void finishFunction(FuncState &state, ArrayRef<Value> results, ArrayRef<std::string> outputNames = {});
  /// The i32 inputs of a model function read only as embedding ids get the
  /// smallest table's rows as their bound (lm.vocab): `segments` of BERT is 2.
  void boundEmbeddingInputs(func::FuncOp func);
  BlockArgument addInput(FuncState &state, RankedTensorType type, const std::string &name,
                         ast::Loc l);

  /// Inlines a call of block or model `fn` (arguments already matched to its
  /// parameters) in a new scope; returns the value of its `return`.
  FailureOr<LMValue> inlineFunction(const ast::Function &fn, std::vector<LMValue> args,
                                    const std::vector<ast::Loc> &argLocs, ast::Loc callLoc,
                                    Env env);
  /// Evaluates a call of a block or model named in the source.
  FailureOr<LMValue> emitUserCall(const ast::Function &fn, const ast::Expr &call, Env &env);
  /// Matches positional and keyword arguments of `call` to `fn`'s parameters.
  FailureOr<std::vector<LMValue>> matchArguments(const ast::Function &fn, const ast::Expr &call,
                                                 Env &env, std::vector<ast::Loc> &argLocs);
  LogicalResult bindParameter(const ast::Function &fn, const ast::Parameter &p,
                              const LMValue &arg, ast::Loc argLoc, Env &env);
  LogicalResult emitStatements(const ast::Function &fn, Env &env,
                               std::optional<LMValue> &returned);
  LogicalResult emitParamStmt(const ast::Stmt &stmt, Env &env);
  FailureOr<DictionaryAttr> initializer(const ast::Expr &init, Env &env, int64_t lastDim, int64_t rank);
  FailureOr<DictionaryAttr> blocksInitializer(const ast::Expr &init, Env &env, int64_t lastDim);
  /// Signature dims of `type` evaluated in `env`; dims naming an unbound
  /// identifier fail with `what` in the message.
  FailureOr<RankedTensorType> resolveType(const ast::TypeExpr &type, Env &env,
                                          const std::string &what);
  FailureOr<Type> elementType(const ast::TypeExpr &type);

public:
  /// Creates (or, for a model called again or a shared call, finds) parameter
  /// `fullName`; frozen when `frozen` or env.frozen. `reuse` looks it up
  /// like env.reuseParams. `share` (or env.shareExisting): a parameter that
  /// another model already declared in this function under the same path is
  /// that parameter (`shared = true` across models, docs/language.md §5).
  FailureOr<Value> createParam(Env &env, const std::string &fullName, RankedTensorType type,
                               DictionaryAttr init, ast::Loc l, bool frozen = false,
                               bool reuse = false, bool share = false);
  /// The parameter scope a call opens in `env`: `<env.scope>.<name>` with the
  /// call's `name = "..."`, else the callee's name `dflt`. A name opened twice
  /// in one scope is an error (parameter paths never depend on call order),
  /// unless the call says `shared = true` (flags.shared): then `*reuse` is set
  /// and the call uses the parameters already declared under that name.
  FailureOr<std::string> callScope(Env &env, const ast::Expr &call, const std::string &dflt,
                                   Env *callee = nullptr, const CallFlags &flags = {},
                                   bool *reuse = nullptr);
  /// The `name = "..."` keyword of a call, or null.
  static const ast::KeywordArg *nameArg(const ast::Expr &call);
  /// True for the keywords every parameter-declaring call takes (name,
  /// shared, frozen), which are not arguments of the callee.
  static bool isScopeKeyword(const std::string &kw) {
    return kw == "name" || kw == "shared" || kw == "frozen";
  }
  /// The `shared = ...` and `frozen = ...` keywords of `call` (true or false).
  FailureOr<CallFlags> callFlags(const ast::Expr &call, Env &env);
  static std::string join(const std::string &scope, const std::string &name);
  DictionaryAttr initAttr(StringRef kind, ArrayRef<std::pair<StringRef, double>> args);

  //--- EmitExpr.cpp -------------------------------------------------------------
  FailureOr<LMValue> eval(const ast::Expr &e, Env &env);
  /// Evaluates a compile-time integer (a dim, heads=, an index).
  FailureOr<int64_t> evalInt(const ast::Expr &e, Env &env, const std::string &what);
  FailureOr<double> evalNumber(const ast::Expr &e, Env &env, const std::string &what);
  FailureOr<int64_t> evalDim(const ast::Expr &e, Env &env, const std::string &what);
  /// Requires a float tensor (`what` names it in the message).
  FailureOr<Value> floatTensor(const LMValue &v, ast::Loc l, const std::string &what);
  Value constantScalar(double v, ast::Loc l);
  LMValue lookupConfig(const std::string &name, bool &found) const;
  RankedTensorType tensorType(ArrayRef<int64_t> dims, Type elem) const {
    return RankedTensorType::get(dims, elem);
  }
  /// The most elements a tensor may have (2^40): no machine holds more, and
  /// the products of such counts stay far from int64 overflow.
  static constexpr int64_t kMaxElements = int64_t(1) << 40;
  /// An error at `l` when a shape that can grow (the result of broadcast,
  /// matmul or embed, checked before the op, whose result type is inferred,
  /// is built) has more than kMaxElements elements.
  LogicalResult checkElementCount(ArrayRef<int64_t> dims, ast::Loc l);
  /// tensorType for a shape the program states (a signature, a parameter),
  /// bounded by checkElementCount.
  FailureOr<RankedTensorType> checkedType(ArrayRef<int64_t> dims, Type elem, ast::Loc l);

private:
  FailureOr<LMValue> evalName(const ast::Expr &e, Env &env);
  FailureOr<LMValue> evalUnary(const ast::Expr &e, Env &env);
  FailureOr<LMValue> evalBinary(const ast::Expr &e, Env &env);
  FailureOr<LMValue> evalMatmul(const ast::Expr &e, Env &env);
  FailureOr<LMValue> evalIndex(const ast::Expr &e, Env &env);
  /// `pos + k` arithmetic on the run-time position offset (a decode program).
  FailureOr<LMValue> offsetArithmetic(const ast::Expr &e, const LMValue &a, const LMValue &b);
  /// The subscript of `e` at the position offset as an lm.dynamic_slice of
  /// `base`; its axis, or -1 when there is none.
  FailureOr<int64_t> dynamicSlice(const ast::Expr &e, Env &env, LMValue &base);
  FailureOr<LMValue> evalCall(const ast::Expr &e, Env &env);
  /// "; did you mean 'tokens'?" for a near miss among `candidates`, or "".
  static std::string suggest(const std::string &name, const std::vector<std::string> &candidates);

  //--- Builtins.cpp -------------------------------------------------------------
public:
  static bool isBuiltin(const std::string &name);
  static std::vector<std::string> builtinNames();
  /// True for `transpose(x)` with one argument: `@` folds it into the matmul.
  static bool isPlainTranspose(const ast::Expr &e);

private:
  FailureOr<LMValue> emitBuiltin(const ast::Expr &call, Env &env);
  FailureOr<LMValue> emitRepeat(const ast::Expr &call, Env &env);
  void tagLayer(Block *block, Operation *before, Block::iterator end, const std::string &layer);

  //--- BuiltinsMath.cpp ---------------------------------------------------------
  /// The builtins of BuiltinsMath.cpp that take a tensor first.
  static bool isMathBuiltin(const std::string &name);
  /// Emits math builtin `call` whose arguments are matched to its signature
  /// in `arg` (null where omitted); `first` is the evaluated first argument
  /// (unset for concat and arange, which evaluate their own).
public:
  FailureOr<LMValue> emitMath(const ast::Expr &call, const std::vector<const ast::Expr *> &arg,
                              const LMValue &first, Env &env);

  //--- BuiltinsSequence.cpp -----------------------------------------------------
  /// conv1d and lstm (compositions of existing ops), like emitMath.
  static bool isSequenceBuiltin(const std::string &name);
  FailureOr<LMValue> emitSequence(const ast::Expr &call, const std::vector<const ast::Expr *> &arg,
                                  const LMValue &first, Env &env);

  //--- BuiltinsAttention.cpp ----------------------------------------------------
  /// attention(..., bias =, segments =, scale =, dropout =): lm.biased_attention
  /// of the evaluated q, k, v (`qkv`) and `mask` (null: none), arguments matched
  /// to attention's signature in `arg`; `dropout` > 0 (an objective's, checked)
  /// drops probabilities at the next dropout site.
  FailureOr<LMValue> emitBiasedAttention(const ast::Expr &call, const std::vector<const ast::Expr *> &arg, Env &env,
                                         Value qkv[3], int64_t heads, bool causal, int64_t kvHeads, Value mask,
                                         double dropout = 0);

private:
  /// where(cond, a, b) on i32 values `vs` (evaluated): lm.where_int.
  FailureOr<LMValue> emitWhereInt(const ast::Expr &call, const std::vector<const ast::Expr *> &arg,
                                  ArrayRef<LMValue> vs);

  //--- Settings.cpp -------------------------------------------------------------
  LogicalResult evalConfig();
  FailureOr<DictionaryAttr> trainAttr();
  /// The train block's `mesh` and `zero` with FrontendOptions' overrides; none for
  /// one process. `train` is trainAttr()'s (ZeRO needs an elementwise optimizer).
  FailureOr<std::optional<DictionaryAttr>> meshAttr(DictionaryAttr train);
  DictionaryAttr configAttr();
  /// lm.data for an objective whose one input is i32[batch, seq + 1].
  /// With `data = <transform>(...)` in the train section, the transform's; else
  /// the causal one when it applies. Sets the bounds on the objective's inputs.
  FailureOr<std::optional<DictionaryAttr>> dataAttr(const ast::Function &objective,
                                                    func::FuncOp op);
  std::optional<DictionaryAttr> causalDataAttr(const ast::Function &objective, func::FuncOp op);

  //--- ParamGroups.cpp ----------------------------------------------------------
  /// The train block's no_decay and groups, applied to every function's
  /// parameter arguments (lm.weight_decay, lm.frozen, lm.lr_scale,
  /// lm.trust_ratio); the groups as written for lm.train, or a null ArrayAttr
  /// when there are none. `decayAll`: no_decay was given (HF's rule).
  FailureOr<ArrayAttr> paramGroupsAttr(bool &decayAll);

  //--- Lora.cpp -----------------------------------------------------------------
  /// The train block's `lora = { targets = [...], rank = R, alpha = A }`, its
  /// patterns resolved to parameter names: lm.lora for the -lm-lora pass, or
  /// none without the setting.
  FailureOr<std::optional<DictionaryAttr>> loraAttr();

  //--- Export.cpp ---------------------------------------------------------------
  /// lm.exports: one dictionary per `export` section, each parameter of the
  /// module (every func argument with lm.param) mapped by exactly one rule.
  FailureOr<ArrayAttr> exportsAttr();
};

} // namespace mlir::lm

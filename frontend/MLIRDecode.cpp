//===- MLIRDecode.cpp - The prefill and decode functions of a model -------===//
//
// Incremental decoding (docs/runtime.md, "Sampling"): a causal model is
// elaborated twice more, for one batch row, with `pos` bound to a run-time
// position offset (an i32[] argument "offset"):
//   @<model>.prefill (lm.prefill)  tokens i32[1, W] at offset 0: the forward
//                                  program's logits, and every cache filled;
//   @<model>.decode  (lm.decode)   tokens i32[1, 1] at offset p < W: the logits
//                                  of one new token, its keys and values added.
// W, the window, is the forward function's sequence length. Each causal
// attention gets a key and a value cache [1, W, kv_dim]: function arguments
// `lm.state = "<scope>.k_cache"` and results carrying the same name, which the
// plan writer turns into STATE buffers updated in place. A model is decodable
// when its one input is i32 [B, T], its result is [B, T, V] logits over (at
// least) the input's vocabulary, every attention in it is causal and it
// reads `pos` (otherwise every new token would sit at position 0); anything
// that fails in the decode elaboration leaves the module as it was, with a
// warning saying why sampling will re-run the window instead.
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "dialect/IR/LMOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::lm {

void MLIRGen::emitDecodePrograms(const ast::Function &fn, func::FuncOp forward) {
  // One token input i32[B, T] (compile-time arguments may come with it).
  int tokenInputs = 0, other = 0;
  int64_t window = 0, vocab = 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, "lm.input"))
      continue;
    auto t = dyn_cast<RankedTensorType>(forward.getArgument(i).getType());
    if (t && t.getRank() == 2 && t.getElementType().isInteger(32)) {
      ++tokenInputs, window = t.getDimSize(1);
      if (auto v = forward.getArgAttrOfType<IntegerAttr>(i, "lm.vocab"))
        vocab = v.getInt();
    } else {
      ++other;
    }
  }
  if (tokenInputs != 1 || other != 0)
    return;
  // Only a language model is sampled from: its result scores every token of
  // the input's vocabulary at each position. A task head on the same trunk
  // (two span logits, a class per token) is not, and needs no warning.
  if (forward.getNumResults() != 1)
    return;
  auto logits = dyn_cast<RankedTensorType>(forward.getResultTypes().front());
  if (!logits || logits.getRank() != 3 || logits.getDimSize(1) != window ||
      (vocab > 0 && logits.getDimSize(2) < vocab))
    return;
  // An encoder (any attention without the causal mask, or with a padding mask) is
  // not sampled from.
  bool encoder = false;
  forward.walk([&](AttentionOp op) { encoder |= !op.getCausal(); });
  forward.walk([&](MaskedAttentionOp) { encoder = true; });
  if (encoder)
    return;
  std::string why;
  if (!emitDecodeFunction(fn, window, window, "prefill", why)) {
    if (!why.empty())
      emitWarning(loc(fn.nameLoc)) << "model '" << fn.name << "' gets no decode program (lmrt sample will re-run "
                                   << "the whole window for every token): " << why;
    return;
  }
  if (!emitDecodeFunction(fn, window, 1, "decode", why)) {
    module.lookupSymbol<func::FuncOp>(fn.name + ".prefill").erase();
    emitWarning(loc(fn.nameLoc)) << "model '" << fn.name << "' gets no decode program (lmrt sample will re-run "
                                 << "the whole window for every token): " << why;
  }
}

bool MLIRGen::emitDecodeFunction(const ast::Function &fn, int64_t window, int64_t tokens, StringRef kind,
                                 std::string &why) {
  const ModelSpec *spec = nullptr;
  if (auto it = modelSpecs.find(fn.name); it != modelSpecs.end())
    spec = &it->second;
  DecodeState ds;
  ds.window = window;
  ds.maxOffset = window - tokens;

  // The training elaboration already reported every warning; errors here only
  // say why this model cannot be decoded.
  std::string firstError;
  ScopedDiagnosticHandler capture(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      llvm::raw_string_ostream os(firstError);
      if (auto fl = dyn_cast<FileLineColLoc>(d.getLocation()))
        os << fl.getFilename().getValue() << ":" << fl.getLine() << ":" << fl.getColumn() << ": ";
      os << d.str();
    }
    return success();
  });

  FuncState state;
  beginFunction(state, fn);
  state.op.setSymName(fn.name + "." + kind.str());
  state.op->setAttr("lm." + kind.str(), builder.getUnitAttr());
  std::vector<LMValue> args;
  std::vector<ast::Loc> argLocs;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    argLocs.push_back(fn.params[i].loc);
    if (spec && !spec->argTypes[i]) {
      args.push_back(spec->args[i]);
      continue;
    }
    auto type = RankedTensorType::get({1, tokens}, builder.getI32Type());
    args.push_back(LMValue::ofTensor(addInput(state, type, "tokens", fn.params[i].loc)));
  }
  ds.offset = state.entry->addArgument(RankedTensorType::get({}, builder.getI32Type()), loc(fn.loc));
  // The offsets at which `tokens` new positions fit the window: the bound the
  // runtime checks at the program boundary (Input.vocab).
  state.argAttrs.push_back(builder.getDictionaryAttr(
      {builder.getNamedAttr("lm.input", builder.getStringAttr("offset")),
       builder.getNamedAttr("lm.vocab", builder.getI64IntegerAttr(ds.maxOffset + 1))}));

  decode = &ds;
  FailureOr<LMValue> result = inlineFunction(fn, std::move(args), argLocs, fn.loc, Env());
  decode = nullptr;
  bool ok = succeeded(result) && result->isTensor() && !ds.notCausal && ds.usedPos;
  if (!ok) {
    if (ds.notCausal)
      why.clear(); // an encoder: not a model to sample from, nothing to say
    else if (!firstError.empty())
      why = firstError;
    else if (succeeded(result) && ds.attentions > 0 && !ds.usedPos)
      why = "it never reads the position offset 'pos', so every decoded token would sit at position 0 "
            "(write wpe[pos:pos + T] or arange(pos, pos + T) where it uses positions)";
    else
      why.clear(); // no attention and no positions: nothing a cache would save
    state.op.erase();
    cur = nullptr;
    return false;
  }
  builder.setInsertionPointToEnd(state.entry);
  SmallVector<Value> results = {result->tensor};
  for (const DecodeState::Cache &c : ds.caches)
    results.push_back(c.updated);
  builder.create<func::ReturnOp>(result->tensor.getLoc(), results);
  state.op.setFunctionType(builder.getFunctionType(state.entry->getArgumentTypes(), ValueRange(results).getTypes()));
  state.op.setAllArgAttrs(state.argAttrs);
  // All at once: setResultAttr per cache builds a new array of every result's
  // dictionary each time (quadratic in the layers).
  SmallVector<DictionaryAttr> resultAttrs{builder.getDictionaryAttr({})};
  for (const DecodeState::Cache &c : ds.caches)
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr("lm.state", builder.getStringAttr(c.name))));
  state.op.setAllResultAttrs(resultAttrs);
  cur = nullptr;
  return true;
}

FailureOr<Value> MLIRGen::emitCachedAttention(Env &env, ast::Loc l, Value q, Value k, Value v, int64_t heads,
                                              int64_t kvHeads) {
  DecodeState &ds = *decode;
  ++ds.attentions;
  // Caches are named after the scope of the attention ("layer.0.attn.k_cache"),
  // numbered when one scope holds several.
  std::string base = env.scope.empty() ? "attention" : env.scope;
  auto taken = [&](const std::string &name) { return ds.cacheNames.contains(name + ".k_cache"); };
  for (int n = 2; taken(base); ++n)
    base = (env.scope.empty() ? "attention" : env.scope) + "_" + std::to_string(n);
  Location where = loc(l);
  auto addCache = [&](Value x, const std::string &name) -> Value {
    auto t = cast<RankedTensorType>(x.getType());
    auto type = RankedTensorType::get({t.getDimSize(0), ds.window, t.getDimSize(2)}, t.getElementType());
    BlockArgument cache = cur->entry->addArgument(type, where);
    cur->argAttrs.push_back(builder.getDictionaryAttr({builder.getNamedAttr("lm.state", builder.getStringAttr(name))}));
    Value updated = builder.create<CacheWriteOp>(where, cache, x, ds.offset);
    ds.caches.push_back({name, updated});
    ds.cacheNames.insert(name);
    return updated;
  };
  Value kc = addCache(k, base + ".k_cache"), vc = addCache(v, base + ".v_cache");
  return Value(builder.create<CachedAttentionOp>(where, q, kc, vc, ds.offset, heads, kvHeads));
}

} // namespace mlir::lm

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
// An encoder-decoder model (its inputs ids [B, T], attention_mask [B, T] and
// decoder_ids [B, S], as models/t5.lm's) gets three functions:
//   @<model>.encode  (lm.encode)   ids, attention_mask i32/f32[1, T]: the
//                                  keys and values of every cross-attention
//                                  (over the encoder's output), into states
//                                  [1, T, kv_dim] ("<scope>.k_encoder"), once;
//   @<model>.prefill, .decode      the decoder over W = S positions as above,
//                                  reading attention_mask and those states.
// Which attention is which follows from what it depends on: queries that do
// not depend on the decoded tokens are the encoder's (elaborated as in the
// forward program and then dead: erased with the encoder's other ops and
// parameters), keys and values that do not are the cross-attention's, and
// attention over the tokens themselves is the decoder's causal self-attention,
// cached, with its bias's rows at the new positions (the model writes
// bias[pos:pos + T] over cache_len(T) keys, blocks/t5.lm).
//
//===----------------------------------------------------------------------===//
#include "frontend/MLIRGen.h"

#include "contract/shape_rules.h"
#include "dialect/IR/LMOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::lm {

/// Keeps the first error a decode program's elaboration reports, with its
/// file:line:col: the reason this model cannot be decoded.
static void keepFirstError(Diagnostic &d, std::string &firstError) {
  if (d.getSeverity() != DiagnosticSeverity::Error || !firstError.empty())
    return;
  llvm::raw_string_ostream os(firstError);
  if (auto fl = dyn_cast<FileLineColLoc>(d.getLocation()))
    os << fl.getFilename().getValue() << ":" << fl.getLine() << ":" << fl.getColumn() << ": ";
  os << d.str();
}

void MLIRGen::emitDecodePrograms(const ast::Function &fn, func::FuncOp forward) {
  // An encoder-decoder model: its inputs ids, attention_mask and decoder_ids.
  int seq2seqInputs = 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (auto name = forward.getArgAttrOfType<StringAttr>(i, "lm.input"))
      seq2seqInputs += name.getValue() == "ids" || name.getValue() == "attention_mask" ||
                       name.getValue() == "decoder_ids";
  if (seq2seqInputs == 3)
    return emitSeq2SeqDecodePrograms(fn, forward);
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
    keepFirstError(d, firstError);
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
    ds.tokens = args.back().tensor;
  }
  addOffsetInput(state, ds, fn);
  return finishDecodeFunction(fn, state, ds, std::move(args), std::move(argLocs), firstError, why);
}

void MLIRGen::addOffsetInput(FuncState &state, DecodeState &ds, const ast::Function &fn) {
  ds.offset = state.entry->addArgument(RankedTensorType::get({}, builder.getI32Type()), loc(fn.loc));
  // The offsets at which `tokens` new positions fit the window: the bound the
  // runtime checks at the program boundary (Input.vocab).
  state.argAttrs.push_back(builder.getDictionaryAttr(
      {builder.getNamedAttr("lm.input", builder.getStringAttr("offset")),
       builder.getNamedAttr("lm.vocab", builder.getI64IntegerAttr(ds.maxOffset + 1))}));
}

bool MLIRGen::finishDecodeFunction(const ast::Function &fn, FuncState &state, DecodeState &ds,
                                   std::vector<LMValue> args, std::vector<ast::Loc> argLocs, std::string &firstError,
                                   std::string &why) {
  decode = &ds;
  FailureOr<LMValue> result = inlineFunction(fn, std::move(args), argLocs, fn.loc, Env());
  decode = nullptr;
  bool ok = succeeded(result) && result->isTensor() && !ds.notCausal && (ds.usedPos || ds.encode);
  SmallVector<Value> results;
  if (ok) {
    builder.setInsertionPointToEnd(state.entry);
    if (!ds.encode) // encode returns only the states it writes
      results.push_back(result->tensor);
    for (const DecodeState::Cache &c : ds.caches)
      results.push_back(c.updated);
    builder.create<func::ReturnOp>(result->tensor.getLoc(), results);
    // What the results do not read (the encoder in prefill and decode, the
    // decoder in encode) goes, with its parameters and placeholder inputs.
    if (ds.seq2seq && failed(pruneDecodeFunction(state, ds)))
      ok = false;
  }
  if (!ok) {
    if (!ds.why.empty())
      why = ds.why;
    else if (ds.notCausal)
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
  state.op.setFunctionType(builder.getFunctionType(state.entry->getArgumentTypes(), ValueRange(results).getTypes()));
  state.op.setAllArgAttrs(state.argAttrs);
  // All at once: setResultAttr per cache builds a new array of every result's
  // dictionary each time (quadratic in the layers).
  SmallVector<DictionaryAttr> resultAttrs;
  if (!ds.encode)
    resultAttrs.push_back(builder.getDictionaryAttr({}));
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
  Value kc = addDecodeCache(where, k, base + ".k_cache"), vc = addDecodeCache(where, v, base + ".v_cache");
  return Value(builder.create<CachedAttentionOp>(where, q, kc, vc, ds.offset, heads, kvHeads));
}

LogicalResult MLIRGen::pruneDecodeFunction(FuncState &state, DecodeState &ds) {
  Block &body = *state.entry;
  // Ops in reverse: an op whose results nothing reads is dead (every op the
  // frontend emits computes its results and nothing else).
  for (Operation *op = body.getTerminator()->getPrevNode(); op;) {
    Operation *before = op->getPrevNode();
    if (op->use_empty())
      op->erase();
    op = before;
  }
  for (BlockArgument arg : ds.placeholders)
    if (!arg.use_empty()) {
      ds.why = ds.encode ? "the cross-attention's keys and values depend on the decoder's tokens"
                         : "the decoder reads the encoder's output other than as an attention's keys and values";
      return failure();
    }
  for (int i = (int)body.getNumArguments() - 1; i >= 0; --i) {
    BlockArgument arg = body.getArgument(i);
    bool placeholder = llvm::is_contained(ds.placeholders, arg);
    if (!arg.use_empty() || !(placeholder || state.argAttrs[i].get("lm.param")))
      continue;
    body.eraseArgument(i);
    state.argAttrs.erase(state.argAttrs.begin() + i);
  }
  return success();
}

void MLIRGen::emitSeq2SeqDecodePrograms(const ast::Function &fn, func::FuncOp forward) {
  // ids i32[B, T], attention_mask f[B, T], decoder_ids i32[B, S] -> logits [B, S, V].
  RankedTensorType ids, mask, dec;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, "lm.input");
    auto t = dyn_cast<RankedTensorType>(forward.getArgument(i).getType());
    if (!name || !t)
      continue;
    (name.getValue() == "ids" ? ids : name.getValue() == "attention_mask" ? mask : dec) = t;
  }
  if (!ids || !mask || !dec || ids.getRank() != 2 || mask.getShape() != ids.getShape() || dec.getRank() != 2 ||
      !isa<FloatType>(mask.getElementType()) || forward.getNumResults() != 1)
    return;
  auto logits = dyn_cast<RankedTensorType>(forward.getResultTypes().front());
  if (!logits || logits.getRank() != 3 || logits.getDimSize(1) != dec.getDimSize(1))
    return;
  const int64_t window = dec.getDimSize(1), encoderSeq = ids.getDimSize(1);
  auto maskType = RankedTensorType::get({1, encoderSeq}, mask.getElementType());
  std::string why;
  const char *kinds[] = {"prefill", "decode", "encode"};
  for (int k = 0; k < 3; ++k) {
    const int64_t tokens = k == 1 ? 1 : window;
    if (emitSeq2SeqFunction(fn, window, encoderSeq, maskType, tokens, kinds[k], why))
      continue;
    for (int j = 0; j < k; ++j)
      module.lookupSymbol<func::FuncOp>(fn.name + "." + kinds[j]).erase();
    if (!why.empty())
      emitWarning(loc(fn.nameLoc)) << "encoder-decoder model '" << fn.name << "' gets no decode programs (lmrt "
                                   << "sample will re-run the whole model for every token): " << why;
    return;
  }
}

bool MLIRGen::emitSeq2SeqFunction(const ast::Function &fn, int64_t window, int64_t encoderSeq,
                                  RankedTensorType maskType, int64_t tokens, StringRef kind, std::string &why) {
  // Its parameters are the three inputs (a compile-time argument: not a model
  // of the runtime's shape), checked before any function is begun.
  for (const ast::Parameter &p : fn.params)
    if (p.name != "ids" && p.name != "attention_mask" && p.name != "decoder_ids")
      return false;
  DecodeState ds;
  ds.window = window;
  ds.seq2seq = true;
  ds.encode = kind == "encode";
  ds.maxOffset = ds.encode ? 0 : window - tokens;
  std::string firstError;
  ScopedDiagnosticHandler capture(&ctx, [&](Diagnostic &d) {
    keepFirstError(d, firstError);
    return success();
  });
  FuncState state;
  beginFunction(state, fn);
  state.op.setSymName(fn.name + "." + kind.str());
  state.op->setAttr("lm." + kind.str(), builder.getUnitAttr());
  // A placeholder: an argument the elaboration reads but the function will not
  // (the encoder's ids in prefill and decode, the decoder's in encode).
  auto placeholder = [&](RankedTensorType type, ast::Loc l) {
    BlockArgument arg = state.entry->addArgument(type, loc(l));
    state.argAttrs.push_back(builder.getDictionaryAttr({}));
    ds.placeholders.push_back(arg);
    return arg;
  };
  auto i32 = [&](int64_t n) { return RankedTensorType::get({1, n}, builder.getI32Type()); };
  std::vector<LMValue> args;
  std::vector<ast::Loc> argLocs;
  for (const ast::Parameter &p : fn.params) {
    argLocs.push_back(p.loc);
    Value v;
    if (p.name == "ids")
      v = ds.encode ? Value(addInput(state, i32(encoderSeq), "ids", p.loc)) : Value(placeholder(i32(encoderSeq), p.loc));
    else if (p.name == "attention_mask")
      v = addInput(state, maskType, "attention_mask", p.loc);
    else
      v = ds.encode ? Value(placeholder(i32(1), p.loc)) : Value(addInput(state, i32(tokens), "tokens", p.loc));
    args.push_back(LMValue::ofTensor(v));
    if (p.name == "decoder_ids")
      ds.tokens = v;
  }
  if (ds.encode) {
    // No offset input: the decoder (dead) sits at position 0 and the states
    // are written whole.
    auto type = RankedTensorType::get({}, builder.getI32Type());
    ds.offset = builder.create<ConstantOp>(loc(fn.loc), TypeRange{type}, ValueRange{},
                                           ArrayRef<NamedAttribute>{builder.getNamedAttr(
                                               "value", DenseElementsAttr::get(type, builder.getI32IntegerAttr(0)))});
  } else {
    addOffsetInput(state, ds, fn);
  }
  return finishDecodeFunction(fn, state, ds, std::move(args), std::move(argLocs), firstError, why);
}

bool MLIRGen::dependsOnTokens(Value root) {
  llvm::DenseMap<Value, bool> &memo = decode->onTokens;
  // Post-order over the values `root` is computed from (iterative: a deep
  // model's chain of layers would overflow a recursion).
  SmallVector<std::pair<Value, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [v, expanded] = stack.back();
    if (memo.count(v)) {
      stack.pop_back();
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!def) {
      memo[v] = v == decode->tokens;
      stack.pop_back();
      continue;
    }
    if (!expanded) {
      stack.back().second = true;
      for (Value o : def->getOperands())
        if (!memo.count(o))
          stack.push_back({o, false});
      continue;
    }
    bool on = llvm::any_of(def->getOperands(), [&](Value o) { return memo.lookup(o); });
    for (Value r : def->getResults())
      memo[r] = on;
    stack.pop_back();
  }
  return memo.lookup(root);
}

Value MLIRGen::addDecodeCache(Location where, Value x, const std::string &name) {
  DecodeState &ds = *decode;
  auto t = cast<RankedTensorType>(x.getType());
  auto type = RankedTensorType::get({t.getDimSize(0), ds.window, t.getDimSize(2)}, t.getElementType());
  BlockArgument cache = cur->entry->addArgument(type, where);
  cur->argAttrs.push_back(builder.getDictionaryAttr({builder.getNamedAttr("lm.state", builder.getStringAttr(name))}));
  Value updated = builder.create<CacheWriteOp>(where, cache, x, ds.offset);
  ds.caches.push_back({name, updated});
  ds.cacheNames.insert(name);
  return updated;
}

FailureOr<Value> MLIRGen::emitDecodedBiasedAttention(Env &env, ast::Loc l, Value qkv[3], Value mask, bool hasMask,
                                                     Value bias, Value segments, bool hasSegments, Value key,
                                                     int64_t heads, bool causal, int64_t kvHeads, double scale) {
  DecodeState &ds = *decode;
  Location where = loc(l);
  auto dims = [](Value v) {
    auto s = cast<RankedTensorType>(v.getType()).getShape();
    return lmrt::shapes::Dims(s.begin(), s.end());
  };
  auto attend = [&](Value q, Value k, Value v, Value m, bool c) -> FailureOr<Value> {
    std::string err;
    if (!lmrt::shapes::biasedAttention(dims(q), dims(k), dims(v), dims(m), dims(bias), dims(segments), dims(key),
                                       heads, scale, 0.0, err, kvHeads, c))
      return error(l) << err;
    return Value(builder.create<BiasedAttentionOp>(where, q, k, v, m, bias, segments, key, heads, c, kvHeads,
                                                   llvm::APFloat(scale), llvm::APFloat(0.0), 0));
  };
  // Segments (packed rows) have no cached form; a causal language model with a
  // bias (ALiBi, T5-style) gets no decode programs yet.
  if (hasSegments || !ds.seq2seq) {
    ds.notCausal = true;
    return failure();
  }
  const bool onQ = dependsOnTokens(qkv[0]), onKV = dependsOnTokens(qkv[1]) || dependsOnTokens(qkv[2]);
  if (!onQ) // the encoder's: as in the forward program (dead but for the cross-attention's inputs)
    return attend(qkv[0], qkv[1], qkv[2], mask, causal);
  std::string base = env.scope.empty() ? "attention" : env.scope;
  auto taken = [&](const std::string &name) {
    return ds.cacheNames.contains(name + ".k_cache") || ds.cacheNames.contains(name + ".k_encoder");
  };
  for (int n = 2; taken(base); ++n)
    base = (env.scope.empty() ? "attention" : env.scope) + "_" + std::to_string(n);
  if (!onKV) {
    // The cross-attention: its keys and values are the encoder's, computed
    // once by @encode into states the decoder's functions only read.
    Value kv[2];
    for (int i = 0; i < 2; ++i) {
      std::string name = base + (i ? ".v_encoder" : ".k_encoder");
      Value x = qkv[1 + i];
      if (ds.encode) {
        auto type = cast<RankedTensorType>(x.getType());
        BlockArgument state = cur->entry->addArgument(type, where);
        cur->argAttrs.push_back(
            builder.getDictionaryAttr({builder.getNamedAttr("lm.state", builder.getStringAttr(name))}));
        ds.caches.push_back({name, builder.create<CacheWriteOp>(where, state, x, ds.offset)});
        kv[i] = x;
      } else {
        kv[i] = cur->entry->addArgument(x.getType(), where);
        cur->argAttrs.push_back(
            builder.getDictionaryAttr({builder.getNamedAttr("lm.state", builder.getStringAttr(name))}));
      }
      ds.cacheNames.insert(name);
    }
    return attend(qkv[0], kv[0], kv[1], mask, causal);
  }
  // Attention over the decoded tokens: causal, without a padding mask.
  if (!causal || hasMask) {
    ds.notCausal = true;
    return failure();
  }
  if (ds.encode) // the decoder, dead in encode
    return attend(qkv[0], qkv[1], qkv[2], mask, causal);
  ++ds.attentions;
  auto biasType = cast<RankedTensorType>(bias.getType());
  if (biasType.getRank() > 0 && biasType.getShape().back() != ds.window) {
    ds.why = "the bias of a causal attention has " + std::to_string(biasType.getShape().back()) +
             " keys, the decoder's window " + std::to_string(ds.window) +
             " (a decode function needs its rows at the new positions over every cached key: bias[pos:pos + T] "
             "over cache_len(T) keys)";
    ds.notCausal = true;
    return failure();
  }
  Value kc = addDecodeCache(where, qkv[1], base + ".k_cache"), vc = addDecodeCache(where, qkv[2], base + ".v_cache");
  const int64_t newTokens = cast<RankedTensorType>(qkv[0].getType()).getDimSize(1);
  if (ds.maxOffset == 0) // prefill: the whole window at offset 0, causal as in the forward program
    return attend(qkv[0], kc, vc, mask, true);
  if (newTokens != 1) {
    ds.notCausal = true;
    return failure();
  }
  // One new token at the offset sees keys 0 ... offset: row `offset` of a
  // lower-triangular [W, W] constant as the key mask.
  Type elem = cast<RankedTensorType>(qkv[0].getType()).getElementType();
  auto triType = RankedTensorType::get({ds.window, ds.window}, elem);
  SmallVector<Attribute> tri;
  tri.reserve(ds.window * ds.window);
  for (int64_t i = 0; i < ds.window; ++i)
    for (int64_t j = 0; j < ds.window; ++j)
      tri.push_back(FloatAttr::get(elem, j <= i ? 1.0 : 0.0));
  Value table = builder.create<ConstantOp>(where, TypeRange{triType}, ValueRange{},
                                           ArrayRef<NamedAttribute>{builder.getNamedAttr(
                                               "value", DenseElementsAttr::get(triType, tri))});
  Value keys = builder.create<DynamicSliceOp>(where, table, ds.offset, 0, 0, 1);
  return attend(qkv[0], kc, vc, keys, false);
}

} // namespace mlir::lm

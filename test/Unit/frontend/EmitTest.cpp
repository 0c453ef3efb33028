//===- EmitTest.cpp - Tests of the lm module emitted from .lm sources ----===//
//
// Drives emitModuleFromSource the way `lmc compile` does (a SourceMgr and a
// SourceMgrDiagnosticHandler) and checks the module conventions of
// docs/dialect.md on the zoo models, plus errors with their carets.
//
//===----------------------------------------------------------------------===//
#include "dialect/IR/LMOps.h"
#include "frontend/Frontend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace mlir;

namespace {

std::string readModel(const std::string &name) {
  std::ifstream in(std::string(LMC_MODELS_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// One compile: the module (null on error) and every diagnostic as printed.
struct Compiled {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::string diagnostics;
};

std::unique_ptr<Compiled> compile(const std::string &source, lm::FrontendOptions options = {},
                                  const std::string &filename = "test.lm") {
  auto c = std::make_unique<Compiled>();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, filename),
                               llvm::SMLoc());
  llvm::raw_string_ostream os(c->diagnostics);
  SourceMgrDiagnosticHandler handler(sourceMgr, &c->context, os);
  c->module = lm::emitModuleFromSource(sourceMgr, c->context, options);
  os.flush();
  return c;
}

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  DictionaryAttr init;
};

std::vector<ParamInfo> params(func::FuncOp f) {
  std::vector<ParamInfo> out;
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (auto name = f.getArgAttrOfType<StringAttr>(i, "lm.param")) {
      auto type = cast<RankedTensorType>(f.getArgument(i).getType());
      out.push_back({name.str(),
                     {type.getShape().begin(), type.getShape().end()},
                     f.getArgAttrOfType<DictionaryAttr>(i, "lm.init")});
    }
  return out;
}

int64_t paramCount(func::FuncOp f) {
  int64_t n = 0;
  for (const ParamInfo &p : params(f)) {
    int64_t e = 1;
    for (int64_t d : p.shape)
      e *= d;
    n += e;
  }
  return n;
}

template <typename OpT>
int count(func::FuncOp f) {
  int n = 0;
  f.walk([&](OpT) { ++n; });
  return n;
}

// Tests the objective and model functions of gpt2.lm's tiny preset: inputs, parameter
// names in declaration order, shapes, initializers and unrolled layers.
TEST(Emit, GptTiny) {
  lm::FrontendOptions tiny;
  tiny.preset = "tiny";
  auto c = compile(readModel("gpt2.lm"), tiny, "gpt2.lm");
  ASSERT_TRUE(c->module) << c->diagnostics;
  ModuleOp m = *c->module;

  auto obj = m.lookupSymbol<func::FuncOp>("causal_lm");
  ASSERT_TRUE(obj);
  EXPECT_TRUE(obj->hasAttr("lm.objective"));
  ASSERT_GE(obj.getNumArguments(), 1u);
  EXPECT_EQ(obj.getArgAttrOfType<StringAttr>(0, "lm.input").str(), "tokens");
  EXPECT_EQ(obj.getArgAttrOfType<IntegerAttr>(0, "lm.vocab").getInt(), 256);
  EXPECT_EQ(obj.getArgument(0).getType(),
            RankedTensorType::get({12, 65}, IntegerType::get(&c->context, 32)));
  ASSERT_EQ(obj.getNumResults(), 1u);
  EXPECT_EQ(cast<RankedTensorType>(obj.getResultTypes()[0]).getRank(), 0);

  std::vector<ParamInfo> ps = params(obj);
  ASSERT_EQ(ps.size(), 2u + 4u * 12u + 2u);
  EXPECT_EQ(ps[0].name, "wte");
  EXPECT_EQ(ps[0].shape, (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(ps[1].name, "wpe");
  EXPECT_EQ(ps[2].name, "layer.0.ln_1.gamma");
  EXPECT_EQ(ps[3].name, "layer.0.ln_1.beta");
  EXPECT_EQ(ps[4].name, "layer.0.attn.wqkv");
  EXPECT_EQ(ps[4].shape, (std::vector<int64_t>{128, 384}));
  EXPECT_EQ(ps[8].name, "layer.0.ln_2.gamma");
  EXPECT_EQ(ps[10].name, "layer.0.mlp.w1");
  EXPECT_EQ(ps[12].name, "layer.0.mlp.w2");
  EXPECT_EQ(ps[14].name, "layer.1.ln_1.gamma");
  EXPECT_EQ(ps[ps.size() - 2].name, "ln_f.gamma");
  EXPECT_EQ(ps.back().name, "ln_f.beta");
  EXPECT_EQ(paramCount(obj), 834304);

  // Initializers: normal(0.02), the scaled residual init, ones for gamma.
  EXPECT_EQ(ps[0].init.getAs<StringAttr>("kind").str(), "normal");
  EXPECT_DOUBLE_EQ(ps[0].init.getAs<FloatAttr>("std").getValueAsDouble(), 0.02);
  EXPECT_DOUBLE_EQ(ps[0].init.getAs<FloatAttr>("mean").getValueAsDouble(), 0.0);
  EXPECT_DOUBLE_EQ(ps[12].init.getAs<FloatAttr>("std").getValueAsDouble(), 0.02 / std::sqrt(8.0));
  EXPECT_EQ(ps[2].init.getAs<StringAttr>("kind").str(), "ones");
  EXPECT_EQ(ps[3].init.getAs<StringAttr>("kind").str(), "zeros");

  EXPECT_EQ(count<lm::AttentionOp>(obj), 4);
  EXPECT_EQ(count<lm::LayerNormOp>(obj), 9);
  EXPECT_EQ(count<lm::CrossEntropyOp>(obj), 1);
  EXPECT_EQ(count<lm::TransposeOp>(obj), 0); // folded into the matmul
  int transposedRhs = 0;
  obj.walk([&](lm::MatmulOp op) { transposedRhs += op.getTransposeRhs(); });
  EXPECT_EQ(transposedRhs, 1);

  auto model = m.lookupSymbol<func::FuncOp>("gpt");
  ASSERT_TRUE(model);
  EXPECT_TRUE(model->hasAttr("lm.model"));
  EXPECT_EQ(model.getArgument(0).getType(),
            RankedTensorType::get({12, 64}, IntegerType::get(&c->context, 32)));
  EXPECT_EQ(cast<RankedTensorType>(model.getResultTypes()[0]).getShape(),
            (ArrayRef<int64_t>{12, 64, 256}));
  EXPECT_EQ(paramCount(model), 834304);

  // Every op carries a file:line:col location; those of a repeat copy wrapped
  // in a NameLoc naming the layer (what -lm-remat reads), the others bare.
  std::set<std::string> layers;
  m.walk([&](Operation *op) {
    if (isa<ModuleOp>(op))
      return;
    Location loc = op->getLoc();
    if (auto name = dyn_cast<NameLoc>(loc)) {
      layers.insert(name.getName().str());
      loc = name.getChildLoc();
    }
    EXPECT_TRUE(isa<FileLineColLoc>(loc)) << op->getName().getStringRef().str();
  });
  EXPECT_EQ(layers, (std::set<std::string>{"layer.0", "layer.1", "layer.2", "layer.3"}));
}

// Tests the module attributes lm.config, lm.train and lm.data.
TEST(Emit, ModuleAttributes) {
  lm::FrontendOptions tiny;
  tiny.preset = "tiny";
  auto c = compile(readModel("gpt2.lm"), tiny);
  ASSERT_TRUE(c->module) << c->diagnostics;
  auto cfg = (*c->module)->getAttrOfType<DictionaryAttr>("lm.config");
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg.getAs<IntegerAttr>("d").getInt(), 128);
  EXPECT_EQ(cfg.getAs<IntegerAttr>("batch").getInt(), 12);
  auto train = (*c->module)->getAttrOfType<DictionaryAttr>("lm.train");
  ASSERT_TRUE(train);
  EXPECT_EQ(train.getAs<StringAttr>("optimizer").str(), "adamw");
  EXPECT_DOUBLE_EQ(train.getAs<FloatAttr>("lr").getValueAsDouble(), 3e-3);
  EXPECT_DOUBLE_EQ(train.getAs<FloatAttr>("beta2").getValueAsDouble(), 0.99);
  EXPECT_DOUBLE_EQ(train.getAs<FloatAttr>("eps").getValueAsDouble(), 1e-8);
  EXPECT_EQ(train.getAs<StringAttr>("schedule").str(), "cosine");
  EXPECT_EQ(train.getAs<IntegerAttr>("warmup").getInt(), 100);
  EXPECT_DOUBLE_EQ(train.getAs<FloatAttr>("clip_grad_norm").getValueAsDouble(), 1.0);
  auto data = (*c->module)->getAttrOfType<DictionaryAttr>("lm.data");
  ASSERT_TRUE(data);
  EXPECT_EQ(data.getAs<StringAttr>("transform").str(), "causal");
  EXPECT_EQ(data.getAs<IntegerAttr>("batch").getInt(), 12);
  EXPECT_EQ(data.getAs<IntegerAttr>("seq").getInt(), 64);
  EXPECT_EQ(data.getAs<IntegerAttr>("vocab").getInt(), 256);
}

// Tests that GPT-2 small has exactly the 124,439,808 parameters of the original.
TEST(Emit, Gpt2SmallParameterCount) {
  auto c = compile(readModel("gpt2.lm"));
  ASSERT_TRUE(c->module) << c->diagnostics;
  auto obj = c->module->lookupSymbol<func::FuncOp>("causal_lm");
  ASSERT_TRUE(obj);
  EXPECT_EQ(paramCount(obj), 124439808);
  EXPECT_EQ(params(obj).size(), 2u + 12u * 12u + 2u);
}

// Tests -D overrides (shapes follow) and the f64 float type.
TEST(Emit, DefinesAndFloatType) {
  lm::FrontendOptions options;
  options.defines = {{"layers", "2"}, {"seq", "32"}, {"batch", "3"}};
  options.floatType = "f64";
  options.preset = "tiny";
  auto c = compile(readModel("gpt2.lm"), options);
  ASSERT_TRUE(c->module) << c->diagnostics;
  auto obj = c->module->lookupSymbol<func::FuncOp>("causal_lm");
  EXPECT_EQ(cast<RankedTensorType>(obj.getArgument(0).getType()).getShape(),
            (ArrayRef<int64_t>{3, 33}));
  EXPECT_EQ(count<lm::AttentionOp>(obj), 2);
  EXPECT_TRUE(cast<RankedTensorType>(obj.getResultTypes()[0]).getElementType().isF64());
  for (unsigned i = 1; i < obj.getNumArguments(); ++i)
    EXPECT_TRUE(cast<RankedTensorType>(obj.getArgument(i).getType()).getElementType().isF64());
  // 0.02 / sqrt(2 * layers) follows the override.
  EXPECT_DOUBLE_EQ(params(obj)[12].init.getAs<FloatAttr>("std").getValueAsDouble(),
                   0.02 / std::sqrt(4.0));
}

// Tests that calling a model twice shares its parameters, while calling a
// block twice creates a second set (named block_1).
TEST(Emit, ModelSharingAndBlockNaming) {
  auto ok = compile(R"(
config { d = 4 }
block proj(x: f32[N, d]) -> f32[N, d] {
  param w: [d, d] = normal(0.1)
  return x @ w
}
model m(x: f32[N, d]) -> f32[N, d] {
  return proj(proj(x), name = "out")
}
objective o(a: f32[2, d], b: f32[2, d], t: i32[2]) {
  loss = cross_entropy(m(a) - m(b), t)
}
)");
  ASSERT_TRUE(ok->module) << ok->diagnostics;
  auto obj = ok->module->lookupSymbol<func::FuncOp>("o");
  std::vector<ParamInfo> ps = params(obj);
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].name, "proj.w");
  EXPECT_EQ(ps[1].name, "out.w");
  EXPECT_EQ(count<lm::MatmulOp>(obj), 4);
  EXPECT_FALSE((*ok->module)->getAttr("lm.data")); // three inputs: not a causal LM
}

// Tests that errors carry file:line:col and the source line with a caret.
TEST(Emit, ErrorsPointAtSource) {
  auto c = compile(R"(config { d = 4 }
model m(x: f32[2, d]) -> f32[2, d] {
  param w: [3, d] = normal(0.02)
  return x @ w
}
)",
                   {}, "bad.lm");
  EXPECT_FALSE(c->module);
  EXPECT_NE(c->diagnostics.find("bad.lm:4:12: error: cannot apply '@' to f32[2, 4] and f32[3, 4]"),
            std::string::npos)
      << c->diagnostics;
  EXPECT_NE(c->diagnostics.find("  return x @ w\n           ^"), std::string::npos)
      << c->diagnostics;

  lm::FrontendOptions options;
  options.defines = {{"dd", "3"}};
  auto d = compile("config { d = 4 }\n", options, "bad.lm");
  EXPECT_FALSE(d->module);
  EXPECT_NE(d->diagnostics.find("bad.lm:1:1: error: -D dd=3: no config constant named 'dd' (the "
                                "config defines d)"),
            std::string::npos)
      << d->diagnostics;

  options.defines = {{"d", "1.5"}};
  auto e = compile("config { d = 4 }\n", options, "bad.lm");
  EXPECT_NE(e->diagnostics.find("-D d=1.5: config constant 'd' is an integer"), std::string::npos)
      << e->diagnostics;
}

} // namespace

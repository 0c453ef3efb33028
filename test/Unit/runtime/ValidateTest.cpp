/* Tests plan validation: the hand-built plan passes, and each way of breaking
   it is rejected with a message that says what and where. */
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "base/hash.h"
#include "contract/plan_types.h"
#include "base/tensor.h"
#include "runtime/exec/validate.h"
#include "contract/contract.h"
#include "contract/zero3.h"
#include "test/Unit/runtime/TinyPlan.h"

namespace lmrt {
namespace {

using test::program;
using test::TinyDims;

/* The validation message of `base` after `mutate`, or "(valid)". */
std::string errorAfter(const std::function<void(plan::Plan &)> &mutate, plan::Plan p = test::tinyPlan()) {
  mutate(p);
  try {
    validatePlan(p, "tiny.plan");
  } catch (const Error &e) {
    return e.what();
  }
  return "(valid)";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(Validate, TinyPlanIsValid) {
  EXPECT_NO_THROW(validatePlan(test::tinyPlan(plan::F64), "tiny.plan"));
  EXPECT_NO_THROW(validatePlan(test::tinyPlan(plan::F32), "tiny.plan"));
}

TEST(Validate, EmptyShapeWithHugeDimensions) {
  // An overflow the fuzz build's UBSan reported (test/Fuzz/regressions/plan): [2^40, 2^40, 0]
  // has no elements, but counting them in order overflows int64 before the 0.
  auto huge = [](plan::TensorType *t) {
    t->clear_shape();
    for (int64_t d : {int64_t(1) << 40, int64_t(1) << 40, int64_t(0)}) t->add_shape(d);
  };
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { huge(p.mutable_params(0)->mutable_type()); }), "absurdly large");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) {
               plan::Buffer *b = program(p, "train_step")->mutable_buffers(1);
               huge(b->mutable_type());
               b->set_size_bytes(0);
             }),
             "absurdly large");
}

TEST(Validate, BufferIdOutOfRange) {
  std::string msg = errorAfter([](plan::Plan &p) { program(p, "train_step")->mutable_steps(2)->set_inputs(1, 99); });
  EXPECT_HAS(msg, "plan 'tiny.plan': program 'train_step', step 2 (matmul, from tiny.lm:6:5)");
  EXPECT_HAS(msg, "is buffer 99, out of range");
}

TEST(Validate, UnknownOp) {
  std::string msg = errorAfter([](plan::Plan &p) { program(p, "eval")->mutable_steps(1)->set_op("frobnicate"); });
  EXPECT_HAS(msg, "program 'eval', step 1 (frobnicate, from tiny.lm:5:3): no kernel for op 'frobnicate'");
}

TEST(Validate, WrongArity) {
  std::string msg = errorAfter([](plan::Plan &p) { program(p, "eval")->mutable_steps(2)->add_inputs(0); });
  EXPECT_HAS(msg, "step 2 (matmul");
  EXPECT_HAS(msg, "takes 2 inputs");
}

TEST(Validate, ShapeMismatchCaughtByKernelCheck) {
  // transpose_rhs makes matmul contract h's D=4 against w's V=5.
  std::string msg = errorAfter([](plan::Plan &p) {
    (*program(p, "train_step")->mutable_steps(2)->mutable_attrs())["transpose_rhs"].set_b(true);
  });
  EXPECT_HAS(msg, "program 'train_step', step 2 (matmul, from tiny.lm:6:5): ");
  EXPECT_HAS(msg, "matmul");
}

// With D == V the weight is square, so a plan whose backward matmul spells
// transpose_rhs differently passes every shape check; its kernel would run with
// the default (false) and compute dh = dlogits @ w instead of dlogits @ w^T.
TEST(Validate, RenamedTransposeRhs) {
  TinyDims square{2, 3, 4, 4};
  plan::Plan p = test::tinyPlan(plan::F64, square);
  ASSERT_NO_THROW(validatePlan(p, "tiny.plan"));
  auto &attrs = *program(p, "train_step")->mutable_steps(9)->mutable_attrs();
  ASSERT_EQ(attrs.count("transpose_rhs"), 1u);
  attrs["transposeRhs"] = attrs["transpose_rhs"];
  attrs.erase("transpose_rhs");
  try {
    validatePlan(p, "tiny.plan");
    FAIL() << "a misspelt attribute was accepted";
  } catch (const Error &e) {
    EXPECT_HAS(std::string(e.what()),
               "program 'train_step', step 9 (matmul, from tiny.lm:6:5): unknown attribute 'transposeRhs' for op "
               "'matmul' (it has transpose_lhs, transpose_rhs)");
  }
}

TEST(Validate, AttributeOfTheWrongKind) {
  std::string msg = errorAfter([](plan::Plan &p) {
    (*program(p, "train_step")->mutable_steps(9)->mutable_attrs())["transpose_rhs"].set_i(1);
  });
  EXPECT_HAS(msg, "step 9 (matmul, from tiny.lm:6:5): attribute 'transpose_rhs' must be a bool");
}

TEST(Validate, AttributesOfAnOpWithoutAny) {
  std::string msg = errorAfter([](plan::Plan &p) {
    (*program(p, "eval")->mutable_steps(1)->mutable_attrs())["causal"].set_b(true);
  });
  EXPECT_HAS(msg, "step 1 (embedding, from tiny.lm:5:3): unknown attribute 'causal' for op 'embedding' (it has none)");
}

// A step that leaves out an attribute with a default gets the ODS default.
TEST(Validate, DecodedAttributesCarryTheOpDefaults) {
  plan::Step step;
  step.set_op("layer_norm");
  kernels::Attrs attrs = decodeAttrs(step);
  EXPECT_EQ(attrs.getFloat("epsilon"), 1e-5);
  (*step.mutable_attrs())["epsilon"].set_f(0.5);
  EXPECT_EQ(decodeAttrs(step).getFloat("epsilon"), 0.5);
  step.set_op("cross_entropy");
  step.clear_attrs();
  EXPECT_EQ(decodeAttrs(step).getInt("ignore_index"), -100);
}

TEST(Validate, ArenaOverflow) {
  std::string msg = errorAfter([](plan::Plan &p) {
    auto *prog = program(p, "eval");
    prog->set_arena_bytes(prog->arena_bytes() - 64);
  });
  EXPECT_HAS(msg, "program 'eval', buffer");
  EXPECT_HAS(msg, "overflow the arena of");
}

TEST(Validate, UnalignedOffset) {
  std::string msg = errorAfter([](plan::Plan &p) { program(p, "eval")->mutable_buffers(4)->set_offset(8); });
  EXPECT_HAS(msg, "offset 8 is not a non-negative multiple of 64");
}

TEST(Validate, SizeBytesMismatch) {
  std::string msg = errorAfter([](plan::Plan &p) { program(p, "eval")->mutable_buffers(3)->set_size_bytes(12); });
  EXPECT_HAS(msg, "size_bytes 12 but i32[2, 3] needs 24");
}

TEST(Validate, ReducedPrecisionTypes) {
  // bf16 and f16 are 2-byte storage types: sized, named and converted as such.
  plan::TensorType t;
  t.set_dtype(plan::BF16);
  t.add_shape(2), t.add_shape(3);
  EXPECT_EQ(checkPlanType(t), "");
  EXPECT_EQ(typeBytes(t), 12);
  EXPECT_EQ(planTypeStr(t), "bf16[2, 3]");
  EXPECT_EQ(toTensorType(t).str(), "bf16[2, 3]");
  EXPECT_EQ(toTensorType(t).bytes(), 12);
  EXPECT_EQ(toPlanType(toTensorType(t)).dtype(), plan::BF16);
  t.set_dtype(plan::F16);
  EXPECT_EQ(typeBytes(t), 12);
  EXPECT_EQ(planTypeStr(t), "f16[2, 3]");
  EXPECT_EQ(toPlanType(toTensorType(t)).dtype(), plan::F16);
  // A dtype this reader does not know is an invalid type, not a 4-byte float.
  t.set_dtype((plan::DType)6);
  EXPECT_EQ(checkPlanType(t), "invalid dtype 6 (expected F32, F64, I32, BF16 or F16)");
  EXPECT_EQ(planTypeStr(t), "invalid[2, 3]");
}

TEST(Validate, ReducedPrecisionBufferSize) {
  // An arena buffer of bf16 takes 2 bytes an element: size_bytes says so, and
  // the 4-byte size of the same shape in f32 is rejected.
  std::string msg = errorAfter([](plan::Plan &p) {
    plan::Buffer *b = program(p, "eval")->mutable_buffers(3);
    b->mutable_type()->set_dtype(plan::BF16);
    b->set_size_bytes(24);
  });
  EXPECT_HAS(msg, "size_bytes 24 but bf16[2, 3] needs 12");
}

TEST(Validate, MissingGradOutput) {
  std::string msg = errorAfter([](plan::Plan &p) { program(p, "train_step")->mutable_outputs()->RemoveLast(); });
  EXPECT_HAS(msg, "program 'train_step' has no output 'grad:wte'");
}

// A frozen parameter has no gradient: its "grad:" output is gone, and a plan
// that still has one is rejected.
TEST(Validate, FrozenParameterHasNoGradOutput) {
  EXPECT_EQ(errorAfter([](plan::Plan &p) {
              program(p, "train_step")->mutable_outputs()->RemoveLast();
              for (plan::Param &param : *p.mutable_params())
                if (param.name() == "wte") param.set_frozen(true);
            }),
            "(valid)");
  std::string msg = errorAfter([](plan::Plan &p) {
    for (plan::Param &param : *p.mutable_params())
      if (param.name() == "wte") param.set_frozen(true);
  });
  EXPECT_HAS(msg, "output 'grad:wte': parameter 'wte' is frozen and has no gradient");
}

TEST(Validate, GradOutputMustBeTheGradBuffer) {
  std::string msg = errorAfter([](plan::Plan &p) {
    auto *prog = program(p, "train_step");
    prog->mutable_outputs(1)->set_buffer(prog->outputs(0).buffer());  // "grad:w" -> the loss
  });
  EXPECT_HAS(msg, "output 'grad:w': must be the GRAD buffer of 'w'");
}

TEST(Validate, MetricOutputs) {
  // eval may report its loss buffer (a float scalar) as a metric too.
  auto metric = [](const char *prog, const char *name) {
    return [=](plan::Plan &p) {
      plan::Program *g = program(p, prog);
      plan::Output *o = g->add_outputs();
      o->set_name(name);
      o->set_buffer(g->outputs(0).buffer());
    };
  };
  EXPECT_EQ(errorAfter(metric("eval", "metric:again")), "(valid)");
  EXPECT_HAS(errorAfter(metric("train_step", "metric:acc")),
             "program 'train_step' has a metric output 'metric:acc' (only eval reports metrics)");
  EXPECT_HAS(errorAfter(metric("eval", "metric:")), "program 'eval' has a metric output with no name");
}

TEST(Validate, MissingLossAndPrograms) {
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "eval")->clear_outputs(); }),
             "program 'eval' has no 'loss' output");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_programs()->DeleteSubrange(1, 1); }),
             "has no 'eval' program");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "forward")->set_name("backward"); }),
             "unknown program 'backward'");
}

TEST(Validate, UnknownParamOrTypeMismatch) {
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "eval")->mutable_buffers(1)->set_name("nope"); }),
             "no parameter named 'nope'");
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               auto *b = program(p, "eval")->mutable_buffers(1);  // PARAM wte
               b->mutable_type()->set_dtype(plan::F32);
               b->set_size_bytes(b->size_bytes() / 2);
             }),
             "type f32[5, 4] differs from the parameter's f64[5, 4]");
}

TEST(Validate, InputMustBeDeclared) {
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "eval")->mutable_buffers(0)->set_name("text"); }),
             "'text' is not among the program's declared inputs");
}

TEST(Validate, ConstantDataSize) {
  std::string msg = errorAfter([](plan::Plan &p) {
    for (auto &b : *program(p, "train_step")->mutable_buffers())
      if (b.kind() == plan::Buffer::CONSTANT) b.set_data("abc");
  });
  EXPECT_HAS(msg, "holds 3 data bytes, f64[] needs 8");
}

TEST(Validate, StepMayNotWriteParamsOrInputs) {
  std::string msg = errorAfter([](plan::Plan &p) { program(p, "eval")->mutable_steps(2)->set_outputs(0, 2); });
  EXPECT_HAS(msg, "writes buffer 2, a PARAM buffer");
}

TEST(Validate, ReadBeforeWrite) {
  std::string msg = errorAfter([](plan::Plan &p) {
    auto *steps = program(p, "eval")->mutable_steps();
    steps->SwapElements(1, 2);  // matmul before the embedding that makes its input
  });
  EXPECT_HAS(msg, "step 1 (matmul");
  EXPECT_HAS(msg, "before any step writes it");
}

TEST(Validate, OnlyMarkedOpsWriteOverTheirInput) {
  // The matmul writing its own input 0's buffer: only an op marked in the op table
  // (embedding_grad_add, cache_write) may (test/Codegen/overwrite-operand.mlir).
  std::string msg = errorAfter([](plan::Plan &p) {
    auto *step = program(p, "eval")->mutable_steps(2);
    step->set_outputs(0, step->inputs(0));
  });
  EXPECT_HAS(msg, "step 2 (matmul");
  EXPECT_HAS(msg, "(kernels do not run in place)");
}

TEST(Validate, ClobberedByAliasingBuffer) {
  // Put the logits where h lives: the matmul output would overlap its input.
  std::string msg = errorAfter([](plan::Plan &p) {
    auto *prog = program(p, "eval");
    prog->mutable_buffers(5)->set_offset(prog->buffers(4).offset());
  });
  EXPECT_HAS(msg, "overlaps input buffer 4 in the arena");
  // Put the targets where the ids live: ids are dead after the embedding, so this
  // reuse is legal...
  EXPECT_EQ(errorAfter([](plan::Plan &p) {
              auto *prog = program(p, "eval");
              prog->mutable_buffers(6)->set_offset(prog->buffers(3).offset());
            }),
            "(valid)");
  // ...but in train_step the ids are read again by embedding_grad.
  std::string msg2 = errorAfter([](plan::Plan &p) {
    auto *prog = program(p, "train_step");
    prog->mutable_buffers(6)->set_offset(prog->buffers(3).offset());  // targets over ids
  });
  EXPECT_HAS(msg2, "embedding_grad");
  EXPECT_HAS(msg2, "after an aliasing arena buffer overwrote it");
}

/* train_step with its first reshape (h -> h2) as lmc writes it: h2 a view of h, no step. */
void reshapeAsView(plan::Plan &p) {
  auto *prog = program(p, "train_step");
  for (int s = 0; s < prog->steps_size(); ++s)
    if (prog->steps(s).op() == "reshape") {
      int from = prog->steps(s).inputs(0), to = prog->steps(s).outputs(0);
      prog->mutable_buffers(to)->set_view_of(from);
      prog->mutable_buffers(to)->set_offset(prog->buffers(from).offset());
      prog->mutable_steps()->DeleteSubrange(s, 1);
      return;
    }
}

int firstView(const plan::Program &prog) {
  for (int i = 0; i < prog.buffers_size(); ++i)
    if (prog.buffers(i).has_view_of()) return i;
  return -1;
}

TEST(Validate, ReshapeAsView) {
  EXPECT_EQ(errorAfter(reshapeAsView), "(valid)");
  // The view must have its buffer's bytes...
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               reshapeAsView(p);
               auto *prog = program(p, "train_step");
               prog->mutable_buffers(firstView(*prog))->set_offset(0);
             }),
             "but its bytes [0, ");
  // ...name an ARENA buffer that is not a view...
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               reshapeAsView(p);
               auto *prog = program(p, "train_step");
               prog->mutable_buffers(firstView(*prog))->set_view_of(2);
             }),
             "a PARAM buffer; a view names an ARENA buffer that is not a view");
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               reshapeAsView(p);
               auto *prog = program(p, "train_step");
               int v = firstView(*prog);
               prog->mutable_buffers(v)->set_view_of(v);
             }),
             "which is not another buffer of the program");
  // ...be ARENA itself, and never be written.
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "eval")->mutable_buffers(2)->set_view_of(3); }),
             "only ARENA buffers can be views");
  EXPECT_HAS(errorAfter([](plan::Plan &p) {
               reshapeAsView(p);
               auto *prog = program(p, "train_step");
               int v = firstView(*prog);
               plan::Step *s = prog->add_steps();
               *s = prog->steps(0);
               s->set_outputs(0, v);
             }),
             "(views are never written)");
}

TEST(Validate, ParamCountAndConfigs) {
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.set_param_count(3); }),
             "param_count says 3 but the parameters hold 40 elements");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_train()->mutable_optimizer()->set_beta1(1.0); }),
             "train config: beta1 = 1 must be in [0, 1)");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_train()->mutable_optimizer()->set_lr(-1); }),
             "train config: lr = -1");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_train()->mutable_schedule()->set_kind("step"); }),
             "train config: schedule = \"step\" is not supported (expected \"constant\", \"linear\", \"cosine\" or \"wsd\")");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_train()->mutable_schedule()->set_kind("wsd"); }),
             "train config: cooldown_fraction = 0 must be in (0, 1] for a wsd schedule");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_train()->set_accumulate(-2); }),
             "train config: accumulate = -2 must be in [1, 1048576]");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_data()->set_batch(0); }),
             "data config: batch = 0 must be given and > 0");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_data()->set_seq(4); }),
             "input 'tokens' is i32[2, 4], expected i32[2, 5]");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { p.mutable_params(0)->mutable_init()->set_std(-1); }),
             "parameter 0 'wte': has a normal init with mean 0 and std -1; both must be finite and std >= 0");
}

// lmc (codegen/ModuleConfig.cpp, PlanConvert.cpp) and lmrt state these bounds
// once, in contract/contract.cpp; the lit tests of test/Codegen pin lmc's side.
TEST(Validate, ContractBounds) {
  plan::TrainConfig train = test::tinyPlan().train();
  EXPECT_FALSE(contract::checkTrainConfig(train).has_value());
  train.mutable_schedule()->set_min_lr(0.5);
  std::optional<contract::Violation> v = contract::checkTrainConfig(train);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->str(), "min_lr = 0.5 must be in [0, lr = 0.001]");
  train.mutable_schedule()->set_min_lr(0);
  train.mutable_optimizer()->set_eps(std::nan(""));
  EXPECT_EQ(contract::checkTrainConfig(train)->str(), "eps = nan must be finite and > 0");
  plan::DataConfig data;
  EXPECT_FALSE(contract::hasDataConfig(data));
  data.set_transform("causal");
  EXPECT_TRUE(contract::hasDataConfig(data));
  EXPECT_EQ(contract::checkDataConfig(data)->str(), "batch = 0 must be given and > 0");
  plan::Init init;
  init.set_kind(plan::Init::UNIFORM);
  init.set_low(1);
  init.set_high(-1);
  std::optional<contract::InitViolation> bad = contract::checkInit(init);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->kind + " with " + bad->values + "; " + bad->rule,
            "uniform with low 1 and high -1; both must be finite and low <= high");
  // blocks(...): finite parts that divide the parameter's last dimension.
  init.set_kind(plan::Init::BLOCKS);
  EXPECT_EQ(contract::checkInit(init)->rule, "it needs at least one value");
  init.add_blocks(0);
  init.add_blocks(std::nan(""));
  EXPECT_EQ(contract::checkInit(init)->rule, "every part must be finite");
  init.set_blocks(1, 1.0);
  EXPECT_FALSE(contract::checkInit(init).has_value());
  plan::TensorType t;
  t.add_shape(3);
  t.add_shape(8);
  EXPECT_EQ(contract::checkBlocksShape(init, t), "");
  t.set_shape(1, 7);
  EXPECT_EQ(contract::checkBlocksShape(init, t),
            "has a blocks init of 2 parts, which do not divide its last dimension (7)");
  // orthogonal(gain, blocks = k): a finite gain, a matrix whose last dimension the blocks divide.
  plan::Init orth;
  orth.set_kind(plan::Init::ORTHOGONAL);
  orth.set_gain(std::nan(""));
  EXPECT_EQ(contract::checkInit(orth)->rule, "the gain must be finite");
  orth.set_gain(1.0);
  orth.set_orthogonal_blocks(4);
  EXPECT_FALSE(contract::checkInit(orth).has_value());
  t.set_shape(1, 8);
  EXPECT_EQ(contract::checkBlocksShape(orth, t), "");
  t.set_shape(1, 6);
  EXPECT_EQ(contract::checkBlocksShape(orth, t),
            "has an orthogonal init of 4 blocks, which do not divide its last dimension (6)");
  plan::TensorType vec;
  vec.add_shape(8);
  EXPECT_EQ(contract::checkBlocksShape(orth, vec), "has an orthogonal init, which needs a matrix (rank >= 2), not rank 1");
}

// The mlm transform's config: its vocabulary must hold the specials, its
// parameters are its own and in bounds, and each input is one of its outputs
// with that output's type and bound (labels also accepting -100).
TEST(Validate, MlmDataContract) {
  plan::DataConfig d;
  d.set_transform("mlm");
  d.set_batch(2);
  d.set_seq(8);
  d.set_vocab(260);
  EXPECT_FALSE(contract::checkDataConfig(d).has_value());
  EXPECT_EQ(contract::transformParam(d, "mask_prob"), 0.15);  // the default
  (*d.mutable_params())["nsp"] = 2;
  EXPECT_EQ(contract::checkDataConfig(d)->str(), "params.nsp = 2 must be 0 or 1");
  (*d.mutable_params())["nsp"] = 1;
  (*d.mutable_params())["mask"] = 0.1;
  EXPECT_EQ(contract::checkDataConfig(d)->str(), "params = \"mask\" is not a parameter of transform \"mlm\"");
  d.mutable_params()->erase("mask");
  (*d.mutable_params())["mask_prob"] = 1.5;
  EXPECT_EQ(contract::checkDataConfig(d)->str(), "params.mask_prob = 1.5 must be in [0, 1]");
  (*d.mutable_params())["mask_prob"] = 0.15;
  d.set_vocab(256);
  EXPECT_EQ(contract::checkDataConfig(d)->str(),
            "vocab = 256 must be >= 260 for mlm (the 256 bytes, then [PAD] [CLS] [SEP] [MASK])");
  d.set_vocab(260);
  d.set_transform("bert");
  EXPECT_EQ(contract::checkDataConfig(d)->str(), "transform = \"bert\" is not supported (expected one of causal, mlm, span_mlm, span_corruption, classify, regression, tokens, span, seq2seq, sft, preference)");
  d.set_transform("mlm");

  auto input = [](const std::string &name, plan::DType dtype, std::vector<int64_t> shape, int64_t vocab) {
    plan::Input in;
    in.set_name(name);
    in.mutable_type()->set_dtype(dtype);
    for (int64_t s : shape) in.mutable_type()->add_shape(s);
    in.set_vocab(vocab);
    return in;
  };
  EXPECT_EQ(contract::expectedTransformInput(input("ids", plan::I32, {2, 8}, 260), d), "");
  EXPECT_EQ(contract::expectedTransformInput(input("ids", plan::I32, {2, 8}, 100), d),
            "i32[2, 8] accepting ids below 260 (it declares 100)");
  EXPECT_EQ(contract::expectedTransformInput(input("segments", plan::I32, {2, 8}, 2), d), "");
  EXPECT_EQ(contract::expectedTransformInput(input("nsp_labels", plan::I32, {2}, 2), d), "");
  EXPECT_EQ(contract::expectedTransformInput(input("attention_mask", plan::F32, {2, 8}, 0), d), "");
  EXPECT_EQ(contract::expectedTransformInput(input("attention_mask", plan::I32, {2, 8}, 0), d), "f32[2, 8]");
  plan::Input labels = input("labels", plan::I32, {2, 8}, 260);
  EXPECT_EQ(contract::expectedTransformInput(labels, d), "i32[2, 8] accepting the ignore index -100");
  labels.set_ignore_index(-100);
  EXPECT_EQ(contract::expectedTransformInput(labels, d), "");
  EXPECT_EQ(contract::expectedTransformInput(input("tokens", plan::I32, {2, 9}, 260), d),
            "one of the inputs transform 'mlm' produces (ids, labels, segments, attention_mask, nsp_labels, random_bits)");
  (*d.mutable_params())["nsp"] = 0;
  EXPECT_EQ(contract::expectedTransformInput(input("nsp_labels", plan::I32, {2}, 2), d),
            "one of the inputs transform 'mlm' produces (ids, labels, segments, attention_mask, random_bits)");
  // Sentence-order pairs (ALBERT): sop_labels only with sop = 1, never with nsp.
  EXPECT_EQ(contract::expectedTransformInput(input("sop_labels", plan::I32, {2}, 2), d),
            "one of the inputs transform 'mlm' produces (ids, labels, segments, attention_mask, random_bits)");
  (*d.mutable_params())["sop"] = 1;
  EXPECT_EQ(contract::expectedTransformInput(input("sop_labels", plan::I32, {2}, 2), d), "");
  EXPECT_FALSE(contract::checkDataConfig(d).has_value());
  (*d.mutable_params())["nsp"] = 1;
  EXPECT_EQ(contract::checkDataConfig(d)->str(),
            "params.sop = 1 cannot be combined with nsp = 1 (a row is one kind of pair)");
  (*d.mutable_params())["nsp"] = 0;
  d.set_seq(4);
  EXPECT_EQ(contract::checkDataConfig(d)->str(),
            "seq = 4 is too short for mlm (at least [CLS] a [SEP], and b [SEP] with nsp or sop)");
}

// The span_mlm transform's config: whole-number max_span, mask_prob at most 0.5,
// unit 0 ("word") or 1 ("token"), with token spans max_span <= max_span_tokens;
// and its inputs' bounds: batch * seq for the boundary rows, max_span_tokens for
// the offsets.
TEST(Validate, SpanMlmDataContract) {
  plan::DataConfig d;
  d.set_transform("span_mlm");
  d.set_batch(2);
  d.set_seq(8);
  d.set_vocab(260);
  EXPECT_FALSE(contract::checkDataConfig(d).has_value());
  EXPECT_EQ(contract::transformParam(d, "max_span"), 10);
  EXPECT_EQ(contract::transformParam(d, "geometric_p"), 0.2);
  (*d.mutable_params())["max_span"] = 2.5;
  EXPECT_EQ(contract::checkDataConfig(d)->str(), "params.max_span = 2.5 must be a whole number");
  (*d.mutable_params())["max_span"] = 4;
  EXPECT_EQ(contract::transformParam(d, "unit"), 0);  // "word"
  EXPECT_EQ(contract::transformParam(d, "max_span_tokens"), 15);
  (*d.mutable_params())["unit"] = 2;
  EXPECT_EQ(contract::checkDataConfig(d)->str(), "params.unit = 2 must be \"word\" (0) or \"token\" (1)");
  (*d.mutable_params())["unit"] = 0.5;
  EXPECT_EQ(contract::checkDataConfig(d)->str(), "params.unit = 0.5 must be \"word\" (0) or \"token\" (1)");
  (*d.mutable_params())["unit"] = 1;
  (*d.mutable_params())["max_span"] = 16;
  EXPECT_EQ(contract::checkDataConfig(d)->str(),
            "params.max_span = 16 must be <= max_span_tokens (15) with unit = \"token\" (1): span_pos indexes "
            "max_span_tokens rows");
  (*d.mutable_params())["unit"] = 0;  // words: a span keeps the whole words that fit in 15 tokens
  EXPECT_FALSE(contract::checkDataConfig(d).has_value());
  (*d.mutable_params())["max_span"] = 4;
  (*d.mutable_params())["max_span_tokens"] = 4;
  (*d.mutable_params())["mask_prob"] = 0.6;
  EXPECT_EQ(contract::checkDataConfig(d)->str(), "params.mask_prob = 0.6 must be in [0, 0.5]");
  (*d.mutable_params())["mask_prob"] = 0.15;
  (*d.mutable_params())["nsp"] = 0;
  EXPECT_EQ(contract::checkDataConfig(d)->str(), "params = \"nsp\" is not a parameter of transform \"span_mlm\"");
  d.mutable_params()->erase("nsp");
  d.set_vocab(256);
  EXPECT_EQ(contract::checkDataConfig(d)->str(),
            "vocab = 256 must be >= 260 for span_mlm (the 256 bytes, then [PAD] [CLS] [SEP] [MASK])");
  d.set_vocab(260);
  EXPECT_FALSE(contract::checkDataConfig(d).has_value());

  auto input = [](const std::string &name, std::vector<int64_t> shape, int64_t vocab) {
    plan::Input in;
    in.set_name(name);
    in.mutable_type()->set_dtype(plan::I32);
    for (int64_t s : shape) in.mutable_type()->add_shape(s);
    in.set_vocab(vocab);
    return in;
  };
  EXPECT_EQ(contract::expectedTransformInput(input("span_left", {2, 8}, 16), d), "");
  EXPECT_EQ(contract::expectedTransformInput(input("span_right", {2, 8}, 8), d),
            "i32[2, 8] accepting ids below 16 (it declares 8)");
  EXPECT_EQ(contract::expectedTransformInput(input("span_pos", {2, 8}, 4), d), "");
  EXPECT_EQ(contract::expectedTransformInput(input("span_pos", {2, 8}, 3), d),
            "i32[2, 8] accepting ids below 4 (it declares 3)");
  EXPECT_EQ(contract::expectedTransformInput(input("segments", {2, 8}, 2), d),
            "one of the inputs transform 'span_mlm' produces (ids, labels, attention_mask, span_left, span_right, "
            "span_pos)");
}

// Without the kernels' checks (as lmc runs it) the contract still holds the
// plan to the op table, buffers and dataflow.
TEST(Validate, ContractWithoutKernelChecks) {
  plan::Plan p = test::tinyPlan();
  EXPECT_EQ(contract::checkPlan(p), "");
  (*program(p, "eval")->mutable_steps(2)->mutable_attrs())["transpose_rhs"].set_b(true);
  EXPECT_EQ(contract::checkPlan(p), "");  // a shape error only the matmul kernel's check sees
  program(p, "eval")->mutable_steps(2)->set_op("matmull");
  EXPECT_EQ(contract::checkPlan(p), "program 'eval', step 2 (matmull, from tiny.lm:6:5): no kernel for op 'matmull'");
}

TEST(Validate, MissingAttributeIsAnError) {
  std::string msg = errorAfter([](plan::Plan &p) { program(p, "eval")->mutable_steps(0)->mutable_attrs()->erase("stride"); });
  EXPECT_HAS(msg, "step 0 (slice, from tiny.lm:9:22): missing attribute 'stride' (an integer list, no default)");
}

// --- generated kernels -----------------------------------------------------------

/* The tiny plan plus, at the end of eval, a "fused" step running a generated
   elementwise kernel on the logits (validation never loads the image, so any
   bytes with a matching checksum do). */
plan::Plan withFusedStep() {
  plan::Plan p = test::tinyPlan();
  test::ProgramBuilder b{program(p, "eval")};
  b.next = b.prog->arena_bytes();
  int logits = b.prog->steps(2).outputs(0);
  plan::TensorType t = b.prog->buffers(logits).type();
  int out = b.arena(t);
  (*b.step("fused", {logits}, {out}, "tiny.lm:7:1")->mutable_attrs())["kernel"].set_i(0);
  plan::Kernel *k = p.add_kernels();
  k->set_name("lmc_k0123456789abcdef_f64");
  k->set_schedule(plan::Kernel::ELEMENTWISE);
  k->set_rows(6);
  k->set_cols(5);
  *k->add_args() = t;
  *k->add_args() = t;
  k->set_num_inputs(1);
  plan::KernelLibrary *lib = p.add_kernel_libraries();
  lib->set_target("cpu-x86-64");
  lib->set_image("\x7f" "ELF stand-in");
  lib->set_image_fnv1a(fnv1a64(lib->image()));
  return p;
}

std::string fusedErrorAfter(const std::function<void(plan::Plan &)> &mutate) {
  return errorAfter(mutate, withFusedStep());
}

TEST(Validate, FusedStepIsValid) { EXPECT_EQ(fusedErrorAfter([](plan::Plan &) {}), "(valid)"); }

TEST(Validate, AlteredKernelImage) {
  std::string msg = fusedErrorAfter([](plan::Plan &p) { (*p.mutable_kernel_libraries(0)->mutable_image())[3] ^= 1; });
  EXPECT_HAS(msg, "kernel library 0 (cpu-x86-64): its compiled image does not match its checksum");
}

TEST(Validate, KernelsWithoutLibrary) {
  std::string msg = fusedErrorAfter([](plan::Plan &p) { p.clear_kernel_libraries(); });
  EXPECT_HAS(msg, "has 1 generated kernels but no compiled kernel library");
}

TEST(Validate, FusedKernelOutOfRange) {
  std::string msg = fusedErrorAfter(
      [](plan::Plan &p) { (*program(p, "eval")->mutable_steps(5)->mutable_attrs())["kernel"].set_i(1); });
  EXPECT_HAS(msg, "program 'eval', step 5 (fused, from tiny.lm:7:1): kernel 1 is out of range (the plan has 1)");
}

TEST(Validate, FusedArgTypeMismatch) {
  std::string msg = fusedErrorAfter([](plan::Plan &p) { p.mutable_kernels(0)->mutable_args(1)->set_shape(2, 7); });
  EXPECT_HAS(msg, "kernel 'lmc_k0123456789abcdef_f64' was compiled for arg 1 of type f64[2, 3, 7], the step passes "
                  "f64[2, 3, 5]");
}

TEST(Validate, FusedStepExtraAttribute) {
  std::string msg = fusedErrorAfter(
      [](plan::Plan &p) { (*program(p, "eval")->mutable_steps(5)->mutable_attrs())["transpose_rhs"].set_b(true); });
  EXPECT_HAS(msg, "a fused step has only the attribute 'kernel'");
}

TEST(Validate, EpilogueProductMustBeTheMatmul) {
  std::string msg = fusedErrorAfter([](plan::Plan &p) {
    plan::Kernel *k = p.mutable_kernels(0);
    k->set_schedule(plan::Kernel::MATMUL_EPILOGUE);
    k->set_lhs_arg(0);
    k->set_rhs_arg(0);
    k->set_product_arg(1);
  });
  EXPECT_HAS(msg, "kernel 0 'lmc_k0123456789abcdef_f64': ");
}

}  // namespace
}  // namespace lmrt

namespace lmrt {
namespace {

/* A valid hf map of the tiny plan: wte -> embed (tied head), w -> head (transposed). */
void addHfMap(plan::Plan &p) {
  plan::WeightExport *w = p.add_weight_exports();
  w->set_format("hf");
  w->set_architecture("TinyForCausalLM");
  (*w->mutable_config())["vocab_size"].set_i(8);
  plan::WeightMapEntry *e = w->add_entries();
  e->set_param("wte");
  e->add_names("embed.weight");
  e->add_tied("head.weight");
  e = w->add_entries();
  e->set_param("w");
  e->add_names("out.weight");
  e->set_transpose(true);
}

TEST(Validate, WeightExportMaps) {
  EXPECT_EQ(errorAfter(addHfMap), "(valid)");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addHfMap(p), p.mutable_weight_exports(0)->mutable_entries()->RemoveLast(); }),
             "weight export 0 ('hf'): parameter 'w' is neither mapped nor omitted");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addHfMap(p), p.mutable_weight_exports(0)->mutable_entries(1)->set_param("wte"); }),
             "maps parameter 'wte' twice");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addHfMap(p), p.mutable_weight_exports(0)->mutable_entries(1)->set_param("v"); }),
             "maps 'v', which is not a parameter");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addHfMap(p), p.mutable_weight_exports(0)->mutable_entries(1)->set_names(0, "head.weight"); }),
             "name 'head.weight' (of parameter 'w') is empty or used twice");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addHfMap(p), p.mutable_weight_exports(0)->set_format("onnx"); }),
             "weight export 0 ('onnx'): unknown format (expected hf)");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addHfMap(p), addHfMap(p); }), "a second map for this format");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addHfMap(p), (*p.mutable_weight_exports(0)->mutable_config())["x"].set_f(NAN); }),
             "config 'x' is not finite");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addHfMap(p), p.mutable_weight_exports(0)->mutable_entries(0)->set_transpose(true); }),
             "(valid)");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { addHfMap(p), p.mutable_weight_exports(0)->mutable_entries(0)->clear_names(); }),
             "parameter 'wte' has no name");
}

/* Several maps of a format (one per model class, ELECTRA's two): each maps some
   parameters, together all of them. */
TEST(Validate, SeveralWeightExportMaps) {
  auto two = [](plan::Plan &p) {
    addHfMap(p), addHfMap(p);
    p.mutable_weight_exports(1)->set_architecture("TinyForOther");
    p.mutable_weight_exports(0)->mutable_entries()->RemoveLast();  // wte only
  };
  EXPECT_EQ(errorAfter(two), "(valid)");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { two(p), p.mutable_weight_exports(1)->mutable_entries()->RemoveLast(); }),
             "weight exports ('hf'): no map maps or omits parameter 'w'");
}

/* Omitted parameters (`omit` rules: a model class without SpanBERT's span
   boundary head): each a parameter, once, not also mapped; they cover it. */
TEST(Validate, OmittedWeightExportParams) {
  auto omitW = [](plan::Plan &p) {
    addHfMap(p);
    p.mutable_weight_exports(0)->mutable_entries()->RemoveLast();
    p.mutable_weight_exports(0)->add_omitted("w");
  };
  EXPECT_EQ(errorAfter(omitW), "(valid)");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { omitW(p), p.mutable_weight_exports(0)->add_omitted("w"); }),
             "weight export 0 ('hf'): omits parameter 'w' twice");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { omitW(p), p.mutable_weight_exports(0)->add_omitted("v"); }),
             "omits 'v', which is not a parameter");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { omitW(p), p.mutable_weight_exports(0)->add_omitted("wte"); }),
             "both maps and omits parameter 'wte'");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) {
               omitW(p), p.mutable_weight_exports(0)->clear_entries(), p.mutable_weight_exports(0)->add_omitted("wte");
             }),
             "weight export 0 ('hf'): maps no parameter");
}

/* Forward programs: "forward", or "forward:<model>" each of several (not both);
   their outputs are float tensors named after the model's results. */
TEST(Validate, ForwardPrograms) {
  EXPECT_EQ(errorAfter([](plan::Plan &p) { program(p, "forward")->set_name("forward:gpt"); }), "(valid)");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "forward")->set_name("forward:"); }),
             "unknown program 'forward:'");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { *p.add_programs() = *program(p, "forward"), program(p, "forward")->set_name("forward:b"); }),
             "has both 'forward' and 'forward:b'");
  EXPECT_HAS(errorAfter([](plan::Plan &p) { program(p, "forward")->mutable_outputs(0)->set_name("grad:w"); }),
             "program 'forward' has an output named 'grad:w'");
  EXPECT_EQ(errorAfter([](plan::Plan &p) { program(p, "forward")->mutable_outputs(0)->set_name("mlm_logits"); }),
            "(valid)");
}

/* The predicted peak counts the tall weight-gradient matmul's scratch (matmul.cpp keeps
   C^T in a thread-local buffer), the largest one across programs, once. */
TEST(PredictedMemory, CountsTheLargestMatmulScratchOnce) {
  plan::Plan p;
  auto addMatmul = [&](plan::Program *prog, plan::DType dt, std::vector<int64_t> lhs, std::vector<int64_t> rhs,
                       bool ta, bool tb) {
    int base = prog->buffers_size();
    for (const auto &shape : {lhs, rhs}) {
      plan::Buffer *b = prog->add_buffers();
      b->mutable_type()->set_dtype(dt);
      for (int64_t d : shape) b->mutable_type()->add_shape(d);
    }
    plan::Step *st = prog->add_steps();
    st->set_op("matmul");
    st->add_inputs(base);
    st->add_inputs(base + 1);
    (*st->mutable_attrs())["transpose_lhs"].set_b(ta);
    (*st->mutable_attrs())["transpose_rhs"].set_b(tb);
  };
  plan::Program *train = p.add_programs();
  train->set_arena_bytes(1000);
  // X^T dY with X [K=1024, M=2048], dY [1024, N=128]: C [2048, 128] as C^T, 1 MiB of f32.
  addMatmul(train, plan::F32, {1024, 2048}, {1024, 128}, true, false);
  addMatmul(train, plan::F32, {2048, 1024}, {1024, 128}, false, false);  // X dY-shaped, not X^T: none
  EXPECT_EQ(predictedMemory(p).matmulScratch, 2048 * 128 * 4);
  plan::Program *eval = p.add_programs();
  eval->set_arena_bytes(500);
  addMatmul(eval, plan::F64, {1024, 2048}, {1024, 128}, true, false);  // the same in f64: 2 MiB
  addMatmul(eval, plan::F32, {1024, 2048}, {1024, 512}, true, false);  // a wide output: none
  PredictedMemory m = predictedMemory(p);
  EXPECT_EQ(m.matmulScratch, 2048 * 128 * 8);
  EXPECT_EQ(m.arena, 1000);
  EXPECT_EQ(m.total(), 1000 + 2048 * 128 * 8);
}

/* ZeRO's slices (contract.h's zeroShard) cover every element exactly once, in rank
   order, rank 0's the largest; the prediction counts rank 0's AdamW state only. */
TEST(PredictedMemory, ZeroSlicesAndRankZerosShare) {
  for (int64_t n : {0, 1, 2, 5, 32, 33, 1000, 65537})
    for (int64_t ranks : {1, 2, 3, 4, 7}) {
      int64_t next = 0;
      for (int64_t r = 0; r < ranks; ++r) {
        ShardRange s = zeroShard(n, ranks, r);
        EXPECT_EQ(s.begin, next) << n << " over " << ranks << ", rank " << r;
        EXPECT_LE(s.size(), zeroShard(n, ranks, 0).size());
        EXPECT_GE(s.size(), 0);
        next = s.end;
      }
      EXPECT_EQ(next, n) << n << " over " << ranks;
    }
  EXPECT_EQ(zeroShard(33, 2, 0).size(), 17);
  EXPECT_EQ(zeroShard(33, 2, 1).size(), 16);
  EXPECT_EQ(zeroShard(2, 3, 2).size(), 0);

  plan::Plan p;
  for (int64_t n : {33, 64}) {
    plan::Param *param = p.add_params();
    param->mutable_type()->set_dtype(plan::F32);
    param->mutable_type()->add_shape(n);
  }
  const int64_t bytes = (33 + 64) * 4;
  EXPECT_EQ(predictedMemory(p).optimizer, 2 * bytes);
  p.mutable_train()->mutable_mesh()->set_data(2);
  EXPECT_EQ(predictedMemory(p).optimizer, 2 * bytes);  // plain data parallelism keeps it all
  p.mutable_train()->mutable_mesh()->set_zero(1);
  PredictedMemory m = predictedMemory(p);
  EXPECT_EQ(m.params, bytes);
  EXPECT_EQ(m.grads, bytes);
  EXPECT_EQ(m.optimizer, 2 * (17 + 32) * 4);
  // The parameters' gather of the 33-element one, padded to 2 x 17 (zero_shards.cpp).
  EXPECT_EQ(m.commScratch, 34 * 4);
  EXPECT_EQ(m.total(), 2 * bytes + 2 * (17 + 32) * 4 + 34 * 4);
  // Stage 2: the gradients are rank 0's padded slices (the train step's reduce-scatters,
  // steps of its program, count as the steps' collectives); the parameters' gather stays.
  p.mutable_train()->mutable_mesh()->set_zero(2);
  m = predictedMemory(p);
  EXPECT_EQ(m.params, bytes);
  EXPECT_EQ(m.grads, (17 + 32) * 4);
  EXPECT_EQ(m.optimizer, 2 * (17 + 32) * 4);
  EXPECT_EQ(m.commScratch, 34 * 4);
}

/* Under ZeRO stage 2 the train step binds each gradient as the rank's padded slice of the
   flattened parameter (contract/zero3.h), and the parameters whole. */
TEST(Validate, ZeroStage2GradientSlices) {
  auto stage2 = [](plan::Plan &p) {
    p.mutable_train()->mutable_mesh()->set_data(2);
    p.mutable_train()->mutable_mesh()->set_zero(2);
  };
  // The tiny plan's gradients are whole: wte's f64[5, 4] is bound at its slice f64[10].
  EXPECT_HAS(errorAfter(stage2), "differs from the parameter's gradient's f64[10] (its ZeRO stage 2 slice)");
  plan::Plan p = test::tinyPlan();
  stage2(p);
  EXPECT_EQ(planTypeStr(boundGradType(p, p.params(0))), "f64[10]");
  EXPECT_EQ(planTypeStr(boundParamType(p, p.params(0))), "f64[5, 4]");
  p.mutable_train()->mutable_mesh()->set_zero(1);
  EXPECT_EQ(planTypeStr(boundGradType(p, p.params(0))), "f64[5, 4]");
}

/* The collectives' buffers (contract.cpp, communicationScratch): an all-reduce of n
   elements over D ranks receives D chunks of ceil(n / D) and keeps one chunk's sums;
   the largest of each is kept from call to call. */
TEST(PredictedMemory, CommunicationBuffers) {
  plan::Plan p;
  plan::Program *prog = p.add_programs();
  auto buffer = [&](std::initializer_list<int64_t> shape) {
    plan::Buffer *b = prog->add_buffers();
    b->mutable_type()->set_dtype(plan::F32);
    for (int64_t d : shape) b->mutable_type()->add_shape(d);
    return prog->buffers_size() - 1;
  };
  auto collective = [&](const char *op, int in, int out, int64_t group, int64_t dim = -1) {
    plan::Step *s = prog->add_steps();
    s->set_op(op);
    s->add_inputs(in);
    s->add_outputs(out);
    (*s->mutable_attrs())["group_size"].set_i(group);
    if (dim >= 0) (*s->mutable_attrs())["dim"].set_i(dim);
  };
  EXPECT_EQ(predictedMemory(p).commScratch, 0);  // no collectives: one process
  collective("all_reduce", buffer({101}), buffer({101}), 2);  // 2 x 51 received, 51 summed
  EXPECT_EQ(predictedMemory(p).commScratch, (2 * 51 + 51) * 4);
  // An adjacent all_reduce of the same group joins its bucket (docs/distributed.md,
  // "Buckets and overlap"): one all-reduce of 111 elements (2 x 56 received, 56 summed),
  // and the 111 elements' staging buffer.
  collective("all_reduce", buffer({10}), buffer({10}), 2);
  EXPECT_EQ(predictedMemory(p).commScratch, (2 * 56 + 56 + 111) * 4);
  collective("all_gather", buffer({60}), buffer({120}), 2);  // its input copied, its output for one call
  EXPECT_EQ(predictedMemory(p).commScratch, 2 * 56 * 4 + 60 * 4 + 120 * 4 + 111 * 4);
  // Along a leading dimension (ZeRO-3's flat slices) the kernels copy nothing: a larger
  // gather adds its input copy, not its output.
  collective("all_gather", buffer({1, 100}), buffer({1, 200}), 2, /*dim=*/1);  // outer 1
  collective("all_gather", buffer({100}), buffer({200}), 2, /*dim=*/0);
  EXPECT_EQ(predictedMemory(p).commScratch, 2 * 56 * 4 + 100 * 4 + 120 * 4 + 111 * 4);
  // Not a bucket: all-reduces with another step between them, or of another group.
  plan::Plan q;
  prog = q.add_programs();
  collective("all_reduce", buffer({101}), buffer({101}), 2);
  prog->add_steps()->set_op("add");
  collective("all_reduce", buffer({10}), buffer({10}), 2);
  collective("all_reduce", buffer({10}), buffer({10}), 4);  // 4 x 3 received, 3 summed
  EXPECT_EQ(predictedMemory(q).commScratch, (2 * 51 + 51) * 4);
  // Only the programs `lmrt run` runs count: the train step (the first) and "eval", not
  // a forward that all-gathers its logits.
  prog = q.add_programs();
  prog->set_name("forward");
  collective("all_gather", buffer({1000}), buffer({2000}), 2);
  EXPECT_EQ(predictedMemory(q).commScratch, (2 * 51 + 51) * 4);
  prog->set_name("eval");
  EXPECT_EQ(predictedMemory(q).commScratch, 2 * 51 * 4 + 1000 * 4 + 2000 * 4);  // its input copy outgrows the sums
}

TEST(Validate, ParamSharding) {
  auto split = [](plan::Plan &p, int64_t tensor, int64_t dim, int64_t segments, int64_t axis, int64_t shards) {
    if (tensor > 0) p.mutable_train()->mutable_mesh()->set_tensor(tensor);
    plan::ParamSharding *s = p.mutable_params(0)->mutable_sharding();
    s->set_dim(dim);
    s->set_segments(segments);
    s->set_mesh_axis(axis);
    s->set_shards(shards);
  };
  EXPECT_EQ(errorAfter([&](plan::Plan &p) { split(p, 2, 1, 1, 1, 2); }), "(valid)");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { split(p, 0, 1, 1, 1, 2); }),
             "parameter 0 'wte': has a sharding, and the plan's mesh has no tensor axis (tensor = 0)");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { split(p, 2, 1, 1, 0, 2); }),
             "parameter 0 'wte': is split over mesh axis 0 into 2 shards; a parameter splits over mesh axis 1 "
             "(tensor) into its 2 ranks");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { split(p, 4, 1, 1, 1, 2); }), "into its 4 ranks");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { split(p, 2, 2, 1, 1, 2); }),
             "parameter 0 'wte': has sharding dim 2 with 1 segments, which its type");
  EXPECT_HAS(errorAfter([&](plan::Plan &p) { split(p, 2, 0, 0, 1, 2); }), "has sharding dim 0 with 0 segments");
  // A padded split (a vocabulary the axis does not divide): wte's [5, 4] is a block of 5
  // rows, so 2 blocks pad a logical 6 to 10; 5 would leave rank 1 nothing, 11 does not fit.
  auto padded = [&](int64_t dim, int64_t segments, int64_t size) {
    return [=](plan::Plan &p) {
      split(p, 2, dim, segments, 1, 2);
      p.mutable_params(0)->mutable_sharding()->set_logical_size(size);
    };
  };
  EXPECT_EQ(errorAfter(padded(0, 1, 9)), "(valid)");
  EXPECT_EQ(errorAfter(padded(0, 1, 6)), "(valid)");
  EXPECT_HAS(errorAfter(padded(0, 1, 5)),
             "parameter 0 'wte': has a padded sharding of logical size 5 in 2 blocks of 5 (1 segments); a padded "
             "split has one segment, and every rank holds part of the logical size and at most one block of padding");
  EXPECT_HAS(errorAfter(padded(0, 1, 11)), "has a padded sharding of logical size 11 in 2 blocks of 5");
  EXPECT_HAS(errorAfter(padded(1, 2, 7)), "has a padded sharding of logical size 7 in 2 blocks of 4 (2 segments)");
}

}  // namespace
}  // namespace lmrt

/* Tests that each kernel's check() rejects wrong shapes, dtypes, result types and
   missing or ill-kinded attributes with a message naming the op and the problem;
   that runtime data errors (token ids, targets) name the value and position; and
   that f32 kernels agree with f64 ones on every op in the table. */
#include "KernelTestUtil.h"

#include <algorithm>

#include "contract/op_table.h"

namespace lmrt::kernels::test {
namespace {

const DType F32 = DType::F32, F64 = DType::F64, I32 = DType::I32;

::testing::AssertionResult rejects(const std::string &msg, const std::string &needle) {
  if (msg.empty()) return ::testing::AssertionFailure() << "check() accepted; expected '" << needle << "'";
  if (msg.find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "message '" << msg << "' lacks '" << needle << "'";
  return ::testing::AssertionSuccess();
}

TEST(Check, AttrsGetters) {
  Attrs a = attrs({{"n", (int64_t)3}, {"f", 0.5}, {"b", true}, {"l", std::vector<int64_t>{1, 2}}});
  EXPECT_EQ(a.getInt("n"), 3);
  EXPECT_EQ(a.getFloat("n"), 3.0);  // ints are accepted as floats
  EXPECT_EQ(a.getFloat("f"), 0.5);
  EXPECT_TRUE(a.getBool("b"));
  EXPECT_EQ(a.getInts("l").size(), 2u);
  try {
    a.getInt("f");
    FAIL();
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "attribute 'f' is a float, expected an integer");
  }
  try {
    a.getBool("causal");
    FAIL();
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "attribute 'causal' is missing (expected a bool)");
  }
}

// The kernels read every attribute with a default through addOpDefaults, which
// takes the values from the ODS (through the generated op table): a value the
// caller gave stays, an op without defaults or unknown to the table gets none.
TEST(Check, OpDefaultsComeFromTheOds) {
  Attrs ln = withDefaults("layer_norm"), rms = withDefaults("rms_norm");
  EXPECT_EQ(ln.getFloat("epsilon"), 1e-5);
  EXPECT_EQ(rms.getFloat("epsilon"), 1e-6);
  EXPECT_EQ(withDefaults("cross_entropy").getInt("ignore_index"), -100);
  Attrs mm = withDefaults("matmul", attrs({{"transpose_lhs", true}}));
  EXPECT_TRUE(mm.getBool("transpose_lhs"));
  EXPECT_FALSE(mm.getBool("transpose_rhs"));
  Attrs at = withDefaults("attention", attrs({{"num_heads", (int64_t)4}}));
  EXPECT_FALSE(at.getBool("causal"));
  EXPECT_EQ(at.getInt("num_kv_heads"), 0);
  EXPECT_EQ(at.getInt("num_heads"), 4);
  EXPECT_FALSE(withDefaults("slice").has("start"));  // required: no default to give
  EXPECT_FALSE(withDefaults("no_such_op").has("epsilon"));
}

TEST(Check, Registry) {
  EXPECT_EQ(findKernel("no_such_op"), nullptr);
  EXPECT_EQ(findKernel("constant"), nullptr);  // constants are CONSTANT buffers, not steps
  // One kernel per op of the generated table (RegistryMatchesOpTable), found by name.
  for (const ops::OpInfo &op : ops::allOps()) {
    const KernelDef *k = findKernel(op.name);
    ASSERT_NE(k, nullptr) << op.name;
    EXPECT_STREQ(k->op, op.name);
  }
  EXPECT_EQ(allKernels().size(), ops::allOps().size());
  // Wrong operand counts are reported before anything else.
  EXPECT_TRUE(rejects(checkMsg("add", {{F32, {2}}}, {{F32, {2}}}), "add: expected 2 operands and 1 results, got 1 and 1"));
}

// The kernel table and the op table generated from the ODS agree: one kernel per
// op, same arity, nothing unlisted ("copy" is listed as the runtime-only op).
TEST(Check, RegistryMatchesOpTable) {
  EXPECT_EQ(compareWithOpTable(allKernels()), "");
  std::vector<KernelDef> k = allKernels();
  auto gelu = std::find_if(k.begin(), k.end(), [](const KernelDef &d) { return std::string(d.op) == "gelu"; });
  ASSERT_NE(gelu, k.end());
  KernelDef geluDef = *gelu;
  k.erase(gelu);
  EXPECT_EQ(compareWithOpTable(k), "op 'gelu' has no kernel\n");
  k.push_back(geluDef);
  k.push_back(geluDef);
  EXPECT_EQ(compareWithOpTable(k), "op 'gelu' has 2 kernels\n");
  k.pop_back();
  k.back().numInputs = 2;
  EXPECT_EQ(compareWithOpTable(k), "kernel 'gelu' takes 2 inputs and 1 outputs, the op takes 1 and 1\n");
  k.back().numInputs = 1;
  k.push_back({"frobnicate", 1, 1, geluDef.check, geluDef.run});
  EXPECT_EQ(compareWithOpTable(k), "kernel 'frobnicate' is not an op of the plan's op table\n");
}

// What lm-tblgen writes for a few ops of LMOps.td.
TEST(Check, GeneratedOpTable) {
  EXPECT_EQ(ops::findOp("constant"), nullptr);  // ConstantLike: a CONSTANT buffer, never a step
  const ops::OpInfo *matmul = ops::findOp("matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->numInputs, 2);
  EXPECT_EQ(matmul->numOutputs, 1);
  ASSERT_EQ(matmul->numAttrs, 2);
  const ops::AttrInfo *rhs = matmul->findAttr("transpose_rhs");
  ASSERT_NE(rhs, nullptr);
  EXPECT_EQ(rhs->kind, ops::AttrKind::Bool);
  EXPECT_TRUE(rhs->hasDefault);
  EXPECT_FALSE(rhs->defaultBool);
  EXPECT_EQ(matmul->findAttr("transposeRhs"), nullptr);
  const ops::AttrInfo *eps = ops::findOp("layer_norm_grad")->findAttr("epsilon");
  ASSERT_NE(eps, nullptr);
  EXPECT_EQ(eps->kind, ops::AttrKind::Float);
  EXPECT_EQ(eps->defaultFloat, 1e-5);
  const ops::AttrInfo *heads = ops::findOp("attention_grad")->findAttr("num_heads");
  ASSERT_NE(heads, nullptr);
  EXPECT_EQ(heads->kind, ops::AttrKind::Int);
  EXPECT_FALSE(heads->hasDefault);
  EXPECT_EQ(ops::findOp("cross_entropy")->findAttr("ignore_index")->defaultInt, -100);
  EXPECT_EQ(ops::findOp("slice_grad")->findAttr("stride")->kind, ops::AttrKind::IntList);
  EXPECT_EQ(ops::findOp("attention_grad")->numInputs, 4);
  EXPECT_EQ(ops::findOp("attention_grad")->numOutputs, 3);
  EXPECT_EQ(ops::findOp(ops::kCopyOpName)->numInputs, 1);
}

TEST(Check, Matmul) {
  EXPECT_EQ(checkMsg("matmul", {{F32, {2, 3}}, {F32, {3, 4}}}, {{F32, {2, 4}}}), "");
  EXPECT_TRUE(rejects(checkMsg("matmul", {{F32, {2, 3}}, {F32, {4, 5}}}, {{F32, {2, 5}}}),
                      "matmul: contracted dimensions differ: lhs [2, 3] has K = 3, rhs [4, 5] has K = 4"));
  EXPECT_TRUE(rejects(checkMsg("matmul", {{F32, {2, 3}}, {F64, {3, 4}}}, {{F32, {2, 4}}}),
                      "matmul: rhs f64[3, 4] must have the element type of lhs f32[2, 3]"));
  EXPECT_TRUE(rejects(checkMsg("matmul", {{I32, {2, 3}}, {I32, {3, 4}}}, {{I32, {2, 4}}}),
                      "matmul: lhs i32[2, 3] must be f32 or f64"));
  EXPECT_TRUE(rejects(checkMsg("matmul", {{F32, {2, 3}}, {F32, {3, 4}}}, {{F32, {4, 2}}}),
                      "matmul: result out must be f32[2, 4], got f32[4, 2]"));
  EXPECT_TRUE(rejects(checkMsg("matmul", {{F32, {2, 3}}, {F32, {3, 4}}}, {{F32, {2, 4}}}, attrs({{"transpose_lhs", (int64_t)1}})),
                      "matmul: attribute 'transpose_lhs' is an integer, expected a bool"));
}

TEST(Check, ElementwiseAndSumTo) {
  EXPECT_TRUE(rejects(checkMsg("mul", {{F32, {2, 3}}, {F32, {4}}}, {{F32, {2, 3}}}),
                      "mul: shapes [2, 3] and [4] do not broadcast"));
  EXPECT_TRUE(rejects(checkMsg("add", {{F32, {2, 3}}, {F32, {3}}}, {{F64, {2, 3}}}),
                      "add: result out must be f32[2, 3], got f64[2, 3]"));
  EXPECT_TRUE(rejects(checkMsg("sum_to", {{F32, {2, 3}}}, {{F32, {2}}}),
                      "sum_to: result [2] does not broadcast to operand [2, 3]"));
  EXPECT_TRUE(rejects(checkMsg("gelu_grad", {{F32, {2, 3}}, {F32, {3, 2}}}, {{F32, {2, 3}}}),
                      "gelu_grad: dy f32[3, 2] must have the shape of x f32[2, 3]"));
}

TEST(Check, LayerNormAttentionSoftmax) {
  EXPECT_TRUE(rejects(checkMsg("layer_norm", {{F32, {2, 8}}, {F32, {7}}, {F32, {8}}}, {{F32, {2, 8}}}),
                      "layer_norm: gamma [7] must be [8]"));
  EXPECT_TRUE(rejects(checkMsg("layer_norm", {{F32, {2, 8}}, {F32, {8}}, {F32, {8}}}, {{F32, {2, 8}}},
                               attrs({{"epsilon", -1.0}})),
                      "layer_norm: epsilon must be finite and > 0, got -1"));
  // 0 passed the kernel's own rule once while the verifier rejected it: one rule now.
  EXPECT_TRUE(rejects(checkMsg("layer_norm_grad", {{F32, {2, 8}}, {F32, {8}}, {F32, {2, 8}}},
                               {{F32, {2, 8}}, {F32, {8}}, {F32, {8}}}, attrs({{"epsilon", 0.0}})),
                      "layer_norm_grad: epsilon must be finite and > 0, got 0"));
  EXPECT_TRUE(rejects(checkMsg("layer_norm_grad", {{F32, {2, 8}}, {F32, {8}}, {F32, {2, 8}}},
                               {{F32, {2, 8}}, {F32, {8}}, {F32, {2, 8}}}),
                      "layer_norm_grad: result dbeta must be f32[8], got f32[2, 8]"));
  TensorType q{F32, {2, 4, 12}};
  EXPECT_TRUE(rejects(checkMsg("attention", {q, q, q}, {q}, attrs({{"causal", true}})),
                      "attention: attribute 'num_heads' is missing"));
  // causal has an ODS default, which decodeAttrs (and checkMsg) supply; a kernel
  // handed Attrs without it names the attribute rather than guessing a default.
  EXPECT_EQ(checkMsg("attention", {q, q, q}, {q}, attrs({{"num_heads", (int64_t)4}})), "");
  EXPECT_TRUE(rejects(findKernel("attention")->check({q, q, q}, {q}, attrs({{"num_heads", (int64_t)4}})),
                      "attention: attribute 'causal' is missing"));
  EXPECT_TRUE(rejects(checkMsg("attention", {q, q, q}, {q}, attrs({{"num_heads", (int64_t)5}, {"causal", true}})),
                      "attention: last dim of q [2, 4, 12] (12) is not divisible by num_heads = 5"));
  EXPECT_TRUE(rejects(checkMsg("attention_grad", {q, q, q, {F32, {2, 4}}}, {q, q, q},
                               attrs({{"num_heads", (int64_t)4}, {"causal", true}})),
                      "attention_grad: dy f32[2, 4] must have the shape of q f32[2, 4, 12]"));
  // attention_grad_stats reads the forward's y (q's shape) and lse [B, H, Tq].
  Attrs h4 = attrs({{"num_heads", (int64_t)4}, {"causal", true}});
  TensorType lse{F32, {2, 4, 4}};
  EXPECT_TRUE(rejects(checkMsg("attention_grad_stats", {q, q, q, q, {F32, {2, 4, 1}}, q}, {q, q, q}, h4),
                      "attention_grad_stats: lse f32[2, 4, 1] must be [2, 4, 4] [B, H, Tq]"));
  EXPECT_TRUE(rejects(checkMsg("attention_grad_stats", {q, q, q, {F32, {2, 4}}, lse, q}, {q, q, q}, h4),
                      "attention_grad_stats: y f32[2, 4] must have the shape of q f32[2, 4, 12]"));
  EXPECT_TRUE(rejects(checkMsg("attention_stats", {q, q, q}, {q, {F32, {2, 4}}}, h4),
                      "attention_stats: result lse must be f32[2, 4, 4], got f32[2, 4]"));
  // The packed ops: qkv [B, T, (H + 2*Hkv)*Dh] (here 4 heads of 3: 36 columns).
  TensorType qkv{F32, {2, 4, 36}};
  EXPECT_TRUE(rejects(checkMsg("packed_attention", {{F32, {2, 4, 30}}}, {q}, h4),
                      "packed_attention: last dim of qkv [2, 4, 30] (30) is not divisible by num_heads + 2 * "
                      "num_kv_heads = 12"));
  EXPECT_TRUE(rejects(checkMsg("packed_attention_stats", {qkv}, {q, {F32, {2, 4}}}, h4),
                      "packed_attention_stats: result lse must be f32[2, 4, 4], got f32[2, 4]"));
  EXPECT_TRUE(rejects(checkMsg("packed_attention_grad_stats", {qkv, q, {F32, {2, 4, 1}}, q}, {qkv}, h4),
                      "packed_attention_grad_stats: lse f32[2, 4, 1] must be [2, 4, 4] [B, H, T]"));
  EXPECT_TRUE(rejects(checkMsg("packed_attention_grad_stats", {qkv, q, lse, qkv}, {qkv}, h4),
                      "packed_attention_grad_stats: dy f32[2, 4, 36] must be [2, 4, 12] [B, T, H*Dh]"));
  EXPECT_TRUE(rejects(checkMsg("packed_attention_grad_stats", {qkv, q, lse, q}, {q}, h4),
                      "packed_attention_grad_stats: result dqkv must be f32[2, 4, 36], got f32[2, 4, 12]"));
  EXPECT_TRUE(rejects(checkMsg("softmax", {{F32, {}}}, {{F32, {}}}), "softmax: x f32[] must have rank >= 1"));
  // The vocabulary-parallel loss's bias has one entry per class of the rank's w.
  TensorType rows{F32, {2, 8}}, hs{F32, {2, 8, 16}}, ws{F32, {10, 16}}, ts{I32, {2, 8}}, one{F32, {}};
  Attrs vocab = attrs({{"transpose_rhs", true}, {"vocab", (int64_t)20}});
  EXPECT_EQ(checkMsg("linear_cross_entropy_stats", {hs, ws, ts, one, {F32, {10}}}, {rows, rows, rows, rows}, vocab),
            "");
  EXPECT_TRUE(rejects(checkMsg("linear_cross_entropy_stats", {hs, ws, ts, one, {F32, {16}}}, {rows, rows, rows, rows},
                               vocab),
                      "linear_cross_entropy_stats: bias [16] must be [10] (one per class of w [10, 16])"));
  EXPECT_TRUE(rejects(checkMsg("linear_cross_entropy_stats_grad", {hs, ws, ts, one, {F32, {10}}, rows, rows, rows},
                               {hs, ws, {F32, {9}}}, vocab),
                      "linear_cross_entropy_stats_grad: result dbias must be f32[10], got f32[9]"));
}

TEST(Check, CrossEntropyEmbeddingShapeOps) {
  EXPECT_TRUE(rejects(checkMsg("cross_entropy", {{F32, {2, 3, 5}}, {F32, {2, 3}}}, {{F32, {}}}),
                      "cross_entropy: targets f32[2, 3] must be i32"));
  EXPECT_TRUE(rejects(checkMsg("cross_entropy", {{F32, {2, 3, 5}}, {I32, {2, 4}}}, {{F32, {}}}),
                      "cross_entropy: targets [2, 4] must be [2, 3]"));
  EXPECT_TRUE(rejects(checkMsg("cross_entropy", {{F32, {2, 3, 5}}, {I32, {2, 3}}}, {{F32, {1}}}),
                      "cross_entropy: result loss must be f32[], got f32[1]"));
  EXPECT_TRUE(rejects(checkMsg("cross_entropy_grad", {{F32, {2, 5}}, {I32, {2}}, {F32, {2}}}, {{F32, {2, 5}}}),
                      "cross_entropy_grad: dloss f32[2] must be a scalar"));
  EXPECT_TRUE(rejects(checkMsg("cross_entropy_with_grad", {{F32, {2, 5}}, {I32, {3}}, {F32, {}}}, {{F32, {2, 5}}, {F32, {}}}),
                      "cross_entropy_with_grad: targets [3] must be [2]"));
  EXPECT_TRUE(rejects(checkMsg("cross_entropy_with_grad", {{F32, {2, 5}}, {I32, {2}}, {F32, {}}}, {{F32, {2, 5}}, {F32, {1}}}),
                      "cross_entropy_with_grad: result loss must be f32[], got f32[1]"));
  EXPECT_TRUE(rejects(checkMsg("cross_entropy_with_grad", {{F32, {2, 5}}, {I32, {2}}, {F32, {}}}, {{F32, {2, 5}}}),
                      "cross_entropy_with_grad: expected 3 operands and 2 results, got 3 and 1"));
  EXPECT_TRUE(rejects(checkMsg("embedding", {{F32, {10, 4}}, {F32, {3}}}, {{F32, {3, 4}}}),
                      "embedding: ids f32[3] must be i32"));
  EXPECT_TRUE(rejects(checkMsg("embedding_grad", {{I32, {3}}, {F32, {3, 5}}}, {{F32, {10, 4}}}),
                      "embedding_grad: dy f32[3, 5] must be [3, 4]"));
  EXPECT_TRUE(rejects(checkMsg("embedding_grad_add", {{F32, {10, 4}}, {I32, {3}}, {F32, {3, 5}}}, {{F32, {10, 4}}}),
                      "embedding_grad_add: dy [3, 5] must be [3, 4] (ids [3] with D of base [10, 4])"));
  EXPECT_TRUE(rejects(checkMsg("embedding_grad_add", {{F32, {10, 4}}, {I32, {3}}, {F64, {3, 4}}}, {{F32, {10, 4}}}),
                      "embedding_grad_add: dy"));
  EXPECT_TRUE(rejects(checkMsg("embedding_grad_add", {{F32, {10, 4}}, {I32, {3}}, {F32, {3, 4}}}, {{F32, {11, 4}}}),
                      "embedding_grad_add: result dtable must be f32[10, 4]"));
  EXPECT_TRUE(rejects(checkMsg("reshape", {{F32, {2, 3}}}, {{F32, {5}}}), "reshape: cannot reshape [2, 3]"));
  EXPECT_TRUE(rejects(checkMsg("reshape", {{F32, {2, 3}}}, {{I32, {6}}}), "reshape: result out must be f32[6]"));
  EXPECT_TRUE(rejects(checkMsg("transpose", {{F32, {2, 3}}}, {{F32, {3, 2}}}),
                      "transpose: attribute 'permutation' is missing"));
  Attrs sl = attrs({{"start", std::vector<int64_t>{0}}, {"limit", std::vector<int64_t>{5}},
                    {"stride", std::vector<int64_t>{1}}});
  EXPECT_TRUE(rejects(checkMsg("slice", {{F32, {4}}}, {{F32, {5}}}, sl),
                      "slice: dimension 0 of x [4] needs 0 <= start <= limit <= 4"));
  EXPECT_TRUE(rejects(checkMsg("slice_grad", {{F32, {3}}}, {{F32, {5}}}, sl),
                      "slice_grad: dy f32[3] must be [5], the slice of result f32[5]"));
  EXPECT_TRUE(rejects(checkMsg("copy", {{F32, {3}}}, {{F32, {4}}}), "copy: result out must be f32[3], got f32[4]"));
}

TEST(DataErrors, EmbeddingIdOutOfRange) {
  Buf table = randn({256, 4}), ids = randIds({3, 8}, 256);
  ids.set(17, 300);
  const KernelDef *k = findKernel("embedding");
  Buf out(F64, {3, 8, 4});
  Attrs none;
  KernelCall call{{table.ref(), ids.ref()}, {out.ref()}, none};
  try {
    k->run(call);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "embedding: token id 300 at flat position 17 is outside the vocabulary [0, 256)");
  }
  ids.set(17, -1);
  Buf dt(F64, {256, 4}), dy = randn({3, 8, 4});
  KernelCall g{{ids.ref(), dy.ref()}, {dt.ref()}, none};
  EXPECT_THROW(findKernel("embedding_grad")->run(g), Error);
  KernelCall ga{{dt.ref(), ids.ref(), dy.ref()}, {dt.ref()}, none};
  EXPECT_THROW(findKernel("embedding_grad_add")->run(ga), Error);
}

TEST(DataErrors, CrossEntropyTargetOutOfRange) {
  Buf x = randn({2, 3, 5}), t = randIds({2, 3}, 5), loss(F64, {});
  t.set(4, 5);
  t.set(1, -100);  // the default ignore_index is allowed
  Attrs defaults = withDefaults("cross_entropy");
  KernelCall call{{x.ref(), t.ref()}, {loss.ref()}, defaults};
  try {
    findKernel("cross_entropy")->run(call);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(),
                 "cross_entropy: target 5 at flat position 4 is outside the vocabulary [0, 5) and is not ignore_index -100");
  }
  Buf dl = scalar(1.0), dx(F64, {2, 3, 5});
  KernelCall g{{x.ref(), t.ref(), dl.ref()}, {dx.ref()}, defaults};
  EXPECT_THROW(findKernel("cross_entropy_grad")->run(g), Error);
}

/* One representative call per kernel; f32 inputs are the f64 inputs rounded. */
struct Case {
  std::string op;
  std::vector<Buf> in;
  std::vector<TensorType> out;
  Attrs attrs;
};

Buf offset3() {
  Buf b(DType::I32, {});
  b.set(0, 3);
  return b;
}

/* A key padding mask [2, 5]: row 0 padded after 3 keys, row 1 with holes. */
Buf paddingMask25() {
  Buf m(DType::F64, {2, 5});
  const double v[] = {1, 1, 1, 0, 0, 0, 1, 1, 0, 1};
  for (int i = 0; i < 10; ++i) m.set(i, v[i]);
  return m;
}

/* attention_grad_stats on a consistent (q, k, v, y, lse, dy): y and lse from attention_stats. */
Case attentionGradStatsCase(const Attrs &att, const Shape &s3) {
  Buf q = randn(s3), k = randn(s3), v = randn(s3);
  auto fwd = runKernel("attention_stats", {q, k, v}, {{F64, s3}, {F64, {s3[0], 2, s3[1]}}}, att);
  return {"attention_grad_stats", {q, k, v, fwd[0], fwd[1], randn(s3)}, {{F64, s3}, {F64, s3}, {F64, s3}}, att};
}

/* packed_attention_grad_stats on a consistent (qkv, y, lse, dy): qkv [2, 8, 48] holds q, k, v
   of two heads of 8. */
Case packedGradStatsCase(const Attrs &att, const Shape &s3) {
  Buf qkv = randn({s3[0], s3[1], 3 * s3[2]});
  auto fwd = runKernel("packed_attention_stats", {qkv}, {{F64, s3}, {F64, {s3[0], 2, s3[1]}}}, att);
  return {"packed_attention_grad_stats", {qkv, fwd[0], fwd[1], randn(s3)}, {qkv.type}, att};
}

std::vector<Case> allCases() {
  Attrs att = attrs({{"num_heads", (int64_t)2}, {"causal", true}});
  Attrs attNc = attrs({{"num_heads", (int64_t)2}, {"causal", false}});  // cross-attention: 8 queries, 5 keys
  Attrs sl = attrs({{"start", std::vector<int64_t>{0, 1}}, {"limit", std::vector<int64_t>{3, 8}},
                    {"stride", std::vector<int64_t>{2, 2}}});
  Shape s3{2, 8, 16};
  Attrs vocabStats = attrs({{"transpose_rhs", true}, {"chunk_rows", (int64_t)6}, {"vocab", (int64_t)20}});
  Buf sh = randn(s3), sw = randn({10, 16}), st = randIds({2, 8}, 20);
  Buf sb = randn({10});
  Buf slse = runKernel("linear_cross_entropy_stats", {sh, sw, st, scalar(10), sb},
                       {{F64, {2, 8}}, {F64, {2, 8}}, {F64, {2, 8}}, {F64, {2, 8}}}, vocabStats)[0];
  return {
      {"embedding", {randn({20, 16}), randIds({2, 8}, 20)}, {{F64, {2, 8, 16}}}, {}},
      {"embedding_grad", {randIds({2, 8}, 20), randn({2, 8, 16})}, {{F64, {20, 16}}}, {}},
      {"embedding_grad_add", {randn({20, 16}), randIds({2, 8}, 20), randn({2, 8, 16})}, {{F64, {20, 16}}}, {}},
      {"matmul", {randn({2, 8, 16}), randn({16, 24})}, {{F64, {2, 8, 24}}}, {}},
      {"add", {randn(s3), randn({16})}, {{F64, s3}}, {}},
      {"sub", {randn(s3), randn({8, 1})}, {{F64, s3}}, {}},
      {"mul", {randn(s3), randn(s3)}, {{F64, s3}}, {}},
      {"div", {randn(s3), randn({16}, F64, 0.1)}, {{F64, s3}}, {}},
      {"neg", {randn(s3)}, {{F64, s3}}, {}},
      {"gelu", {randn(s3)}, {{F64, s3}}, {}},
      {"gelu_grad", {randn(s3), randn(s3)}, {{F64, s3}}, {}},
      {"layer_norm", {randn(s3), randn({16}), randn({16})}, {{F64, s3}}, {}},
      {"layer_norm_grad", {randn(s3), randn({16}), randn(s3)}, {{F64, s3}, {F64, {16}}, {F64, {16}}}, {}},
      {"attention", {randn(s3), randn(s3), randn(s3)}, {{F64, s3}}, att},
      {"attention_grad", {randn(s3), randn(s3), randn(s3), randn(s3)}, {{F64, s3}, {F64, s3}, {F64, s3}}, att},
      {"attention_stats", {randn(s3), randn(s3), randn(s3)}, {{F64, s3}, {F64, {2, 2, 8}}}, att},
      attentionGradStatsCase(att, s3),
      {"packed_attention", {randn({2, 8, 48})}, {{F64, s3}}, att},
      {"packed_attention_stats", {randn({2, 8, 48})}, {{F64, s3}, {F64, {2, 2, 8}}}, att},
      packedGradStatsCase(att, s3),
      {"masked_attention", {randn(s3), randn({2, 5, 16}), randn({2, 5, 16}), paddingMask25()}, {{F64, s3}}, attNc},
      {"masked_attention_grad", {randn(s3), randn({2, 5, 16}), randn({2, 5, 16}), paddingMask25(), randn(s3)},
       {{F64, s3}, {F64, {2, 5, 16}}, {F64, {2, 5, 16}}}, attNc},
      {"biased_attention",
       {randn(s3), randn(s3), randn(s3), scalar(1.0), randn({1, 2, 8, 8}), randIds({2, 8}, 3), Buf(DType::I32, {})},
       {{F64, s3}}, att},
      {"biased_attention_grad",
       {randn(s3), randn(s3), randn(s3), scalar(1.0), randn({1, 2, 1, 8}), randIds({2, 8}, 3), Buf(DType::I32, {}),
        randn(s3)},
       {{F64, s3}, {F64, s3}, {F64, s3}, {F64, {1, 2, 1, 8}}}, att},
      {"softmax", {randn(s3)}, {{F64, s3}}, {}},
      {"softmax_grad", {runKernel("softmax", {randn(s3)}, {{F64, s3}})[0], randn(s3)}, {{F64, s3}}, {}},
      {"reshape", {randn(s3)}, {{F64, {16, 16}}}, {}},
      {"transpose", {randn(s3)}, {{F64, {16, 2, 8}}}, attrs({{"permutation", std::vector<int64_t>{2, 0, 1}}})},
      {"slice", {randn({3, 8})}, {{F64, {2, 4}}}, sl},
      {"slice_grad", {randn({2, 4})}, {{F64, {3, 8}}}, sl},
      {"fill", {}, {{F64, s3}}, attrs({{"value", -1.25}})},
      {"cross_entropy", {randn({2, 8, 20}), randIds({2, 8}, 20)}, {{F64, {}}}, {}},
      {"cross_entropy_grad", {randn({2, 8, 20}), randIds({2, 8}, 20), scalar(1.3)}, {{F64, {2, 8, 20}}}, {}},
      {"cross_entropy_with_grad", {randn({2, 8, 20}), randIds({2, 8}, 20), scalar(1.3)}, {{F64, {2, 8, 20}}, {F64, {}}},
       {}},
      {"accuracy", {randn({2, 8, 20}), randIds({2, 8}, 20)}, {{F64, {}}}, {}},
      // Three chunks of 6 rows over 16 (the last partial), a tied [V, D] table (GradTest has the untied [D, V]).
      {"linear_cross_entropy", {randn(s3), randn({20, 16}), randIds({2, 8}, 20)}, {{F64, {}}},
       attrs({{"transpose_rhs", true}, {"chunk_rows", int64_t(6)}})},
      {"linear_cross_entropy_with_grad", {randn(s3), randn({20, 16}), randIds({2, 8}, 20), scalar(1.3)},
       {{F64, s3}, {F64, {20, 16}}, {F64, {}}}, attrs({{"transpose_rhs", true}, {"chunk_rows", int64_t(6)}})},
      // The vocabulary-parallel loss's rank part: classes [10, 20) of 20, chunks of 6 rows.
      {"linear_cross_entropy_stats", {randn(s3), randn({10, 16}), randIds({2, 8}, 20), scalar(10), randn({10})},
       {{F64, {2, 8}}, {F64, {2, 8}}, {F64, {2, 8}}, {F64, {2, 8}}}, vocabStats},
      {"linear_cross_entropy_stats_grad",
       {sh, sw, st, scalar(10), sb, slse, randn({2, 8}), randn({2, 8})},
       {{F64, s3}, {F64, {10, 16}}, {F64, {10}}}, vocabStats},
      {"sum_to", {randn(s3)}, {{F64, {8, 1}}}, {}},
      {"copy", {randn(s3)}, {{F64, s3}}, {}},
      // The zoo's ops.
      {"tanh", {randn(s3)}, {{F64, s3}}, {}},
      {"sigmoid", {randn(s3)}, {{F64, s3}}, {}},
      {"log_sigmoid", {randn(s3)}, {{F64, s3}}, {}},
      {"softplus", {randn(s3)}, {{F64, s3}}, {}},
      {"relu", {randn(s3)}, {{F64, s3}}, {}},
      {"silu", {randn(s3)}, {{F64, s3}}, {}},
      {"exp", {randn(s3)}, {{F64, s3}}, {}},
      {"log", {runKernel("exp", {randn(s3)}, {{F64, s3}})[0]}, {{F64, s3}}, {}},
      {"sqrt", {runKernel("exp", {randn(s3)}, {{F64, s3}})[0]}, {{F64, s3}}, {}},
      {"rsqrt", {runKernel("exp", {randn(s3)}, {{F64, s3}})[0]}, {{F64, s3}}, {}},
      {"sin", {randn(s3)}, {{F64, s3}}, {}},
      {"cos", {randn(s3)}, {{F64, s3}}, {}},
      {"stop_gradient", {randn(s3)}, {{F64, s3}}, {}},
      {"gt", {randn(s3), randn({16})}, {{F64, s3}}, {}},
      {"ge", {randn(s3), randn({16})}, {{F64, s3}}, {}},
      {"lt", {randn(s3), randn({16})}, {{F64, s3}}, {}},
      {"le", {randn(s3), randn({16})}, {{F64, s3}}, {}},
      {"eq", {randn(s3), randn({16})}, {{F64, s3}}, {}},
      {"ne", {randn(s3), randn({16})}, {{F64, s3}}, {}},
      {"where", {runKernel("gt", {randn(s3), scalar(0.0)}, {{F64, s3}})[0], randn(s3), randn({16})}, {{F64, s3}}, {}},
      {"concat", {randn(s3), randn({2, 8, 4})}, {{F64, {2, 8, 20}}}, attrs({{"axis", int64_t(2)}})},
      {"reduce_max", {randn(s3)}, {{F64, {2, 1, 16}}}, attrs({{"axes", std::vector<int64_t>{1}}})},
      {"rms_norm", {randn(s3), randn({16})}, {{F64, s3}}, {}},
      {"rms_norm_grad", {randn(s3), randn({16}), randn(s3)}, {{F64, s3}, {F64, {16}}}, {}},
      {"take_along_axis", {randn(s3), randIds({1, 8, 5}, 16)}, {{F64, {2, 8, 5}}}, attrs({{"axis", int64_t(2)}})},
      {"take_along_axis_grad", {randIds({1, 8, 5}, 16), randn({2, 8, 5})}, {{F64, s3}}, attrs({{"axis", int64_t(2)}})},
      // ELECTRA's: the exact GELU, draws (the same ids from f32 logits), ids as floats.
      {"gelu_erf", {randn(s3)}, {{F64, s3}}, {}},
      {"gelu_erf_grad", {randn(s3), randn(s3)}, {{F64, s3}}, {}},
      {"sample", {randn(s3), randIds({2, 8}, int64_t(1) << 30)}, {{I32, {2, 8}}}, {}},
      {"to_float", {randIds({2, 8}, 300)}, {{F64, {2, 8}}}, {}},
      // Whole numbers (as lm.to_float gives them), which truncate alike in f32 and f64.
      {"to_int", {runKernel("to_float", {randIds({2, 8}, 300)}, {{F64, {2, 8}}})[0]}, {{I32, {2, 8}}}, {}},
      // The key: any i32 (two words a row of s3).
      {"dropout", {randn(s3), randIds({s3[0], 2}, int64_t(1) << 30)}, {{F64, s3}},
       attrs({{"p", 0.3}, {"site", int64_t(5)}})},
      // lm.cast has no f64 form (f32 <-> bf16/f16 only): the same types run twice,
      // which still catches an element left unwritten (outputs start as NaN); its
      // rounding is tested in MixedPrecisionTest.cpp.
      {"cast", {randn(s3).as(DType::BF16)}, {{F32, s3}}, {}},
      {"where_int", {runKernel("gt", {randn(s3), scalar(0.0)}, {{F64, s3}})[0], randIds(s3, 300), randIds({16}, 300)},
       {{I32, s3}}, {}},
      // The decode ops (offset 3: an i32 scalar, the same in both runs).
      {"dynamic_slice", {randn({12, 16}), offset3()}, {{F64, {4, 16}}},
       attrs({{"axis", int64_t(0)}, {"start", int64_t(1)}, {"size", int64_t(4)}})},
      {"cache_write", {randn({1, 12, 16}), randn({1, 4, 16}), offset3()}, {{F64, {1, 12, 16}}}, {}},
      {"cached_attention", {randn({1, 4, 16}), randn({1, 12, 8}), randn({1, 12, 8}), offset3()}, {{F64, {1, 4, 16}}},
       attrs({{"num_heads", (int64_t)2}, {"num_kv_heads", (int64_t)1}})},
      // The collectives in one process (a group of one rank; across ranks: lmrt_comm_test).
      {"all_reduce", {randn(s3)}, {{F64, s3}},
       attrs({{"mesh_axis", int64_t(0)}, {"group_size", int64_t(1)}, {"mean", true}})},
      {"reduce_scatter", {randn(s3)}, {{F64, s3}},
       attrs({{"mesh_axis", int64_t(0)}, {"group_size", int64_t(1)}, {"dim", int64_t(1)}})},
      {"all_gather", {randn(s3)}, {{F64, s3}},
       attrs({{"mesh_axis", int64_t(1)}, {"group_size", int64_t(1)}, {"dim", int64_t(2)}})},
      {"axis_index", {}, {{F64, {}}}, attrs({{"mesh_axis", int64_t(1)}, {"group_size", int64_t(1)}})},
  };
}

TEST(Precision, F32AgreesWithF64) {
  auto cases = allCases();
  EXPECT_EQ(cases.size(), allKernels().size()) << "every kernel needs a case here";
  for (Case &c : cases) {
    auto ref = runKernel(c.op, c.in, c.out, c.attrs);
    std::vector<Buf> in32;
    for (auto &b : c.in) in32.push_back(b.type.dtype == F64 ? b.as(F32) : b);
    std::vector<TensorType> out32 = c.out;
    for (auto &t : out32)
      if (t.dtype == F64) t.dtype = F32;
    auto got = runKernel(c.op, in32, out32, c.attrs);
    ASSERT_EQ(got.size(), ref.size()) << c.op;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].type.dtype, ref[i].type.dtype == F64 ? F32 : ref[i].type.dtype);
      EXPECT_TRUE(allClose(got[i], ref[i], 1e-4, 1e-4)) << c.op << " output " << i;
    }
  }
}

}  // namespace
}  // namespace lmrt::kernels::test

#include "runtime/cpu/kernels/kernel_math.h"

namespace lmrt::kernels::test {
namespace {

/* Tests that the vectorisable f32 exp stays within a few ulp of std::exp and
   handles the special values. */
TEST(Precision, FastExp) {
  using detail::expT;
  double worst = 0;
  for (float x = -87.0f; x < 88.0f; x += 0.01237f) {
    double ref = std::exp((double)x);
    worst = std::max(worst, std::fabs(expT(x) - ref) / ref);
  }
  EXPECT_LT(worst, 5e-7);
  EXPECT_EQ(expT(0.0f), 1.0f);
  EXPECT_EQ(expT(-INFINITY), 0.0f);
  EXPECT_EQ(expT(-200.0f), 0.0f);
  EXPECT_EQ(expT(100.0f), INFINITY);
  EXPECT_TRUE(std::isnan(expT(NAN)));
  EXPECT_NEAR(detail::tanhT(0.3f), std::tanh(0.3f), 1e-7);
  EXPECT_EQ(detail::tanhT(50.0f), 1.0f);
  EXPECT_EQ(detail::tanhT(-50.0f), -1.0f);
}

}  // namespace
}  // namespace lmrt::kernels::test

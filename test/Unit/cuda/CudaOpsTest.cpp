/* Tests that every op's CUDA kernel computes what its CPU kernel computes on the
   same inputs (CudaTestUtil.h: the CPU half runs everywhere, the GPU half where
   a GPU is present): shapes with ragged tiles, broadcasts, transposes, ignored
   targets, causal and full attention at three head sizes, f32 and f64 (bf16 and
   f16 operands for the GEMMs, the casts and the fused loss), padding masks and
   cross-attention. */
#include "contract/elementwise.h"
#include "contract/linear_cross_entropy.h"
#include "test/Unit/cuda/CudaTestUtil.h"

namespace lmrt::cuda::test {
namespace {

kernels::Attrs attrs(std::initializer_list<std::pair<const char *, kernels::Attrs::Value>> kv) {
  kernels::Attrs a;
  for (const auto &[k, v] : kv) a.set(k, v);
  return a;
}

/* One attention shape: batch, query and key lengths, query and key/value heads, head size. */
struct AttnShape {
  int64_t B, Tq, Tk, H, Hkv, Dh;
  bool causal;
};

/* Every form of the attention op at shape c (forward, grad, stats, masked with a wholly
   masked row, their grads), for a test to adjust (TF32, the plan's 16-bit type) and run. */
std::vector<OpCase> attentionForms(const AttnShape &c) {
  kernels::Attrs a = attrs({{"num_heads", c.H}, {"causal", c.causal}, {"num_kv_heads", c.Hkv}});
  TensorType q = f32({c.B, c.Tq, c.H * c.Dh}), k = f32({c.B, c.Tk, c.Hkv * c.Dh}), m = f32({c.B, c.Tk});
  TensorType lse = f32({c.B, c.H, c.Tq});
  std::vector<OpCase> cases = {{"attention", {q, k, k}, {q}, a},
                               {"attention_grad", {q, k, k, q}, {q, k, k}, a},
                               {"attention_stats", {q, k, k}, {q, lse}, a},
                               {"masked_attention", {q, k, k, m}, {q}, a},
                               {"masked_attention_grad", {q, k, k, m, q}, {q, k, k}, a},
                               {"attention_grad_stats", {q, k, k, q, lse, q}, {q, k, k}, a}};
  cases[3].paddingMask = cases[4].paddingMask = 3;
  return cases;
}

TEST(CudaOps, Matmul) {
  runCase({"matmul", {f32({4, 8, 16}), f32({16, 12})}, {f32({4, 8, 12})}, {}});
  runCase({"matmul", {f32({3, 5, 7}), f32({3, 7, 6})}, {f32({3, 5, 6})}, {}});
  runCase({"matmul", {f32({2, 5, 7}), f32({2, 5, 6})}, {f32({2, 7, 6})}, attrs({{"transpose_lhs", true}})});
  runCase({"matmul", {f32({2, 3, 5, 7}), f32({2, 3, 6, 7})}, {f32({2, 3, 5, 6})}, attrs({{"transpose_rhs", true}})});
  runCase({"matmul", {f32({33, 65}), f32({47, 65})}, {f32({33, 47})}, attrs({{"transpose_rhs", true}})});
  runCase({"matmul", {f64({4, 9, 16}), f64({16, 10})}, {f64({4, 9, 10})}, {}});
}

/* Mixed precision (-lm-mixed-precision): bf16 and f16 operands, fp32 accumulation
   and an f32 result, every transposition (docs/mixed-precision.md). The products of
   16-bit numbers are exact in fp32, so only the order of the sums differs. */
TEST(CudaOps, MatmulReducedPrecision) {
  for (auto t : {bf16, f16}) {
    runCase({"matmul", {t({4, 8, 16}), t({16, 12})}, {f32({4, 8, 12})}, {}});
    runCase({"matmul", {t({3, 5, 7}), t({3, 7, 6})}, {f32({3, 5, 6})}, {}});
    runCase({"matmul", {t({2, 5, 7}), t({2, 5, 6})}, {f32({2, 7, 6})}, attrs({{"transpose_lhs", true}})});
    runCase({"matmul", {t({33, 65}), t({47, 65})}, {f32({33, 47})}, attrs({{"transpose_rhs", true}})});
    runCase({"matmul", {t({24, 40}), t({24, 36})}, {f32({40, 36})}, attrs({{"transpose_lhs", true}})});
    runCase({"matmul", {t({2, 9, 5}), t({2, 11, 9})}, {f32({2, 5, 11})},
             attrs({{"transpose_lhs", true}, {"transpose_rhs", true}})});
  }
}

/* The casts round to nearest even on both sides: the same bytes. */
TEST(CudaOps, Cast) {
  for (auto t : {bf16, f16}) {
    OpCase down{"cast", {f32({7, 301})}, {t({7, 301})}, {}};
    down.exact = true;
    runCase(down);
    OpCase up{"cast", {t({7, 301})}, {f32({7, 301})}, {}};
    up.exact = true;
    runCase(up);
  }
}

TEST(CudaOps, Binary) {
  for (const char *op : {"add", "sub", "mul", "div"}) {
    runCase({op, {f32({4, 6, 8}), f32({4, 6, 8})}, {f32({4, 6, 8})}, {}});
    runCase({op, {f32({4, 6, 8}), f32({8})}, {f32({4, 6, 8})}, {}});
    runCase({op, {f32({8}), f32({4, 8})}, {f32({4, 8})}, {}});
    runCase({op, {f32({4, 1, 8}), f32({1, 6, 1})}, {f32({4, 6, 8})}, {}});
  }
  runCase({"add", {f64({3, 5}), f64({5})}, {f64({3, 5})}, {}});
}

TEST(CudaOps, Unary) {
  runCase({"neg", {f32({5, 7})}, {f32({5, 7})}, {}});
  runCase({"gelu", {f32({1000})}, {f32({1000})}, {}});
  runCase({"gelu_grad", {f32({3, 333}), f32({3, 333})}, {f32({3, 333})}, {}});
  runCase({"gelu", {f64({257})}, {f64({257})}, {}});
  runCase({"gelu_erf", {f32({1000})}, {f32({1000})}, {}});
  runCase({"gelu_erf_grad", {f32({3, 333}), f32({3, 333})}, {f32({3, 333})}, {}});
  runCase({"gelu_erf", {f64({257})}, {f64({257})}, {}});
}

/* lm.sample draws exactly the CPU's ids from the same bits (the same f64 walk);
   lm.to_float converts ids. */
TEST(CudaOps, SampleAndToFloat) {
  runCase({"sample", {f32({4, 33, 300}), i32({4, 33})}, {i32({4, 33})}, {}, 2147483647});
  runCase({"sample", {f64({7, 1000}), i32({7})}, {i32({7})}, {}, 2147483647});
  runCase({"to_float", {i32({5, 9})}, {f32({5, 9})}, {}, 30522});
}

/* lm.to_int truncates as the CPU does; lm.axis_index in one process is 0 (i32 and
   float results). */
TEST(CudaOps, ToIntAndAxisIndex) {
  runCase({"to_int", {f32({5, 9})}, {i32({5, 9})}, {}});
  runCase({"to_int", {f64({77})}, {i32({77})}, {}});
  kernels::Attrs group = attrs({{"mesh_axis", int64_t(1)}, {"group_size", int64_t(1)}});
  runCase({"axis_index", {}, {i32({})}, group});
  runCase({"axis_index", {}, {f32({})}, group});
  runCase({"axis_index", {}, {f64({})}, group});
}

TEST(CudaOps, SumTo) {
  runCase({"sum_to", {f32({4, 6, 8})}, {f32({8})}, {}});
  runCase({"sum_to", {f32({130, 3, 8})}, {f32({3, 8})}, {}});
  runCase({"sum_to", {f32({4, 6, 8})}, {f32({1, 6, 1})}, {}});
  runCase({"sum_to", {f32({4, 6, 8})}, {f32({4, 1, 8})}, {}});
  runCase({"sum_to", {f32({5, 6})}, {f32({5, 6})}, {}});
  runCase({"sum_to", {f64({70, 9})}, {f64({9})}, {}});
}

TEST(CudaOps, LayerNorm) {
  runCase({"layer_norm", {f32({4, 6, 32}), f32({32}), f32({32})}, {f32({4, 6, 32})}, {}});
  runCase({"layer_norm", {f32({3, 768}), f32({768}), f32({768})}, {f32({3, 768})}, attrs({{"epsilon", 1e-6}})});
  runCase({"layer_norm_grad", {f32({70, 40}), f32({40}), f32({70, 40})}, {f32({70, 40}), f32({40}), f32({40})}, {}});
  runCase({"layer_norm_grad", {f64({2, 33, 17}), f64({17}), f64({2, 33, 17})}, {f64({2, 33, 17}), f64({17}), f64({17})},
           {}});
}

TEST(CudaOps, Softmax) {
  runCase({"softmax", {f32({5, 7, 33})}, {f32({5, 7, 33})}, {}});
  runCase({"softmax", {f32({2, 3000})}, {f32({2, 3000})}, {}});
  runCase({"softmax_grad", {f32({5, 7, 33}), f32({5, 7, 33})}, {f32({5, 7, 33})}, {}});
}

TEST(CudaOps, CrossEntropy) {
  OpCase ce{"cross_entropy", {f32({6, 5, 50}), i32({6, 5})}, {f32({})}, {}, 50, 7};
  runCase(ce);
  OpCase ceg{"cross_entropy_grad", {f32({6, 5, 50}), i32({6, 5}), f32({})}, {f32({6, 5, 50})}, {}, 50, 7};
  runCase(ceg);
  OpCase both{"cross_entropy_with_grad", {f32({6, 5, 50}), i32({6, 5}), f32({})}, {f32({6, 5, 50}), f32({})}, {}, 50, 7};
  runCase(both);
  OpCase wide{"cross_entropy", {f64({3, 1000}), i32({3})}, {f64({})}, {}, 1000, 0};
  runCase(wide);
}

TEST(CudaOps, LinearCrossEntropy) {
  // 30 rows in chunks of 8 (the last partial): a tied [V, D] table and an untied [D, V] weight.
  kernels::Attrs tied = attrs({{"transpose_rhs", true}, {"chunk_rows", int64_t(8)}});
  kernels::Attrs untied = attrs({{"chunk_rows", int64_t(8)}});
  runCase({"linear_cross_entropy", {f32({6, 5, 16}), f32({50, 16}), i32({6, 5})}, {f32({})}, tied, 50, 7});
  runCase({"linear_cross_entropy_with_grad", {f32({6, 5, 16}), f32({50, 16}), i32({6, 5}), f32({})},
           {f32({6, 5, 16}), f32({50, 16}), f32({})}, tied, 50, 7});
  runCase({"linear_cross_entropy_with_grad", {f64({6, 5, 16}), f64({16, 50}), i32({6, 5}), f64({})},
           {f64({6, 5, 16}), f64({16, 50}), f64({})}, untied, 50, 7});
  // bf16 / f16 h and w: f32 logits, loss and gradients; the backward GEMMs read the
  // chunk's gradient rounded to the operands' type, as the CPU kernel does.
  for (auto t : {bf16, f16}) {
    runCase({"linear_cross_entropy", {t({6, 5, 16}), t({50, 16}), i32({6, 5})}, {f32({})}, tied, 50, 7});
    OpCase withGrad{"linear_cross_entropy_with_grad", {t({6, 5, 16}), t({50, 16}), i32({6, 5}), f32({})},
                    {f32({6, 5, 16}), f32({50, 16}), f32({})}, tied, 50, 7};
    withGrad.rounded = true;
    runCase(withGrad);
    withGrad.in = {t({6, 5, 16}), t({16, 50}), i32({6, 5}), f32({})};
    withGrad.out = {f32({6, 5, 16}), f32({16, 50}), f32({})};
    withGrad.attrs = untied;
    runCase(withGrad);
  }
}

/* The vocabulary-parallel loss's rank part: this rank holds classes [25, 50) of 75 (the ids
   span all three ranks', every 7th ignored), 30 rows in chunks of 8 and in one; a tied
   [Vr, D] table and an untied [D, Vr] weight, f32 and f64. */
TEST(CudaOps, LinearCrossEntropyStats) {
  for (int64_t chunk : {8, 0})
    for (bool tied : {true, false}) {
      SCOPED_TRACE(std::string(tied ? "tied" : "untied") + ", chunk_rows " + std::to_string(chunk));
      kernels::Attrs a = attrs({{"transpose_rhs", tied}, {"chunk_rows", chunk}, {"vocab", int64_t(75)}});
      for (auto t : {f32, f64}) {
        const TensorType h = t({6, 5, 16}), w = tied ? t({25, 16}) : t({16, 25}), rows = t({6, 5});
        const TensorType bias = t({25});
        OpCase stats{"linear_cross_entropy_stats", {h, w, i32({6, 5}), t({}), bias}, {rows, rows, rows, rows}, a, 75, 7};
        stats.fill = {{3, 25.0}};
        runCase(stats);
        OpCase grad{"linear_cross_entropy_stats_grad", {h, w, i32({6, 5}), t({}), bias, rows, rows, rows}, {h, w, bias},
                    a, 75, 7};
        grad.fill = {{3, 25.0}, {5, 8.0}};  // lse near the rows' (logits ~ N(0, 16)): dz of moderate size
        runCase(grad);
      }
    }
}

/* The stats ops take the GPU's chunk too: 5000 rows against a rank's 32768 classes (of
   65536) are 10 CPU chunks of 500 rows and one GPU chunk of 5000. */
TEST(CudaOps, LinearCrossEntropyStatsTakesTheGpusChunk) {
  const int64_t rows = 5000, v = 32768, d = 8;
  const int64_t cpuChunk = kernels::linearCrossEntropyChunkRows(rows, v, d);
  ASSERT_EQ(cpuChunk, 500);
  ASSERT_EQ(kernels::linearCrossEntropyCudaChunkRows(cpuChunk, rows, v, d), rows);
  kernels::Attrs a = attrs({{"transpose_rhs", true}, {"chunk_rows", cpuChunk}, {"vocab", 2 * v}});
  const TensorType h = f32({10, 500, d}), w = f32({v, d}), r = f32({10, 500});
  OpCase grad{"linear_cross_entropy_stats_grad", {h, w, i32({10, 500}), f32({}), f32({v}), r, r, r},
              {h, w, f32({v})}, a, 2 * v, 13};
  grad.fill = {{3, (double)v}, {5, 12.0}};
  runCase(grad);
}

/* Where chunk_rows is lmc's own rule (the CPU's chunk), the GPU takes larger chunks
   (linearCrossEntropyCudaChunkRows): 5000 rows against 65536 classes are 20 CPU chunks
   of 250 rows and 2 GPU chunks of 2500 (the most rows of f32 logits in 1 GiB: 4096). The
   loss and both gradients agree with the CPU's chunks within the f32 tolerance. */
TEST(CudaOps, LinearCrossEntropyTakesTheGpusChunk) {
  const int64_t rows = 5000, v = 65536, d = 8;
  const int64_t cpuChunk = kernels::linearCrossEntropyChunkRows(rows, v, d);
  ASSERT_EQ(cpuChunk, 250);
  ASSERT_EQ(kernels::linearCrossEntropyCudaChunkRows(cpuChunk, rows, v, d), 2500);
  runCase({"linear_cross_entropy_with_grad", {f32({10, 500, d}), f32({v, d}), i32({10, 500}), f32({})},
           {f32({10, 500, d}), f32({v, d}), f32({})}, attrs({{"transpose_rhs", true}, {"chunk_rows", cpuChunk}}), v,
           13});
}

TEST(CudaOps, Embedding) {
  runCase({"embedding", {f32({50, 16}), i32({4, 7})}, {f32({4, 7, 16})}, {}, 50});
  // A vocabulary of 9 for 28 ids: rows receive several contributions.
  runCase({"embedding_grad", {i32({4, 7}), f32({4, 7, 16})}, {f32({9, 16})}, {}, 9});
  runCase({"embedding_grad", {i32({2, 300}), f32({2, 300, 40})}, {f32({1000, 40})}, {}, 1000});
  // Into another gradient of the table (a copy of it here; in place in a plan).
  runCase({"embedding_grad_add", {f32({9, 16}), i32({4, 7}), f32({4, 7, 16})}, {f32({9, 16})}, {}, 9});
}

TEST(CudaOps, TakeAlongAxis) {
  // DeBERTa's shape: [B, H, T, 2k] gathered by a [1, 1, T, T] index; and a
  // middle axis with the index broadcast over the last dim.
  kernels::Attrs last = attrs({{"axis", int64_t(3)}}), mid = attrs({{"axis", int64_t(1)}});
  runCase({"take_along_axis", {f32({2, 3, 17, 34}), i32({1, 1, 17, 17})}, {f32({2, 3, 17, 17})}, last, 34});
  runCase({"take_along_axis_grad", {i32({1, 1, 17, 17}), f32({2, 3, 17, 17})}, {f32({2, 3, 17, 34})}, last, 34});
  runCase({"take_along_axis", {f64({4, 5, 6}), i32({4, 9, 1})}, {f64({4, 9, 6})}, mid, 5});
  runCase({"take_along_axis_grad", {i32({4, 9, 1}), f64({4, 9, 6})}, {f64({4, 5, 6})}, mid, 5});
}

TEST(CudaOps, ShapeOps) {
  runCase({"reshape", {f32({4, 6})}, {f32({24})}, {}});
  runCase({"copy", {f32({4, 6})}, {f32({4, 6})}, {}});
  runCase({"transpose", {f32({3, 4, 5})}, {f32({5, 3, 4})}, attrs({{"permutation", std::vector<int64_t>{2, 0, 1}}})});
  runCase({"transpose", {f64({70, 33})}, {f64({33, 70})}, attrs({{"permutation", std::vector<int64_t>{1, 0}}})});
  kernels::Attrs sl = attrs({{"start", std::vector<int64_t>{0, 1, 2}},
                             {"limit", std::vector<int64_t>{4, 5, 8}},
                             {"stride", std::vector<int64_t>{1, 2, 3}}});
  runCase({"slice", {f32({4, 6, 8})}, {f32({4, 2, 2})}, sl});
  runCase({"slice", {i32({4, 6, 8})}, {i32({4, 2, 2})}, sl, 100});
  runCase({"slice_grad", {f32({4, 2, 2})}, {f32({4, 6, 8})}, sl});
  // Slices that are rows of contiguous elements (one pitched copy): k of a packed QKV
  // (the last dimension cut), a cut middle dimension under a whole last one, the whole
  // tensor; each forward and backward, f32 and f64.
  for (auto [from, to, start, limit] :
       {std::tuple<Shape, Shape, std::vector<int64_t>, std::vector<int64_t>>{{2, 5, 12}, {2, 5, 4}, {0, 0, 4}, {2, 5, 8}},
        {{4, 6, 8}, {4, 2, 8}, {0, 1, 0}, {4, 3, 8}},
        {{3, 7}, {3, 7}, {0, 0}, {3, 7}}}) {
    kernels::Attrs rowsSl = attrs({{"start", start}, {"limit", limit}, {"stride", std::vector<int64_t>(from.size(), 1)}});
    runCase({"slice", {f32(from)}, {f32(to)}, rowsSl});
    runCase({"slice", {f64(from)}, {f64(to)}, rowsSl});
    runCase({"slice_grad", {f32(to)}, {f32(from)}, rowsSl});
    runCase({"slice_grad", {f64(to)}, {f64(from)}, rowsSl});
  }
  // bf16 and f16 slices (2-byte elements): strided (the copy kernel), rows, and ZeRO-3's
  // cut of a parameter gathered in bf16 (the padding after n elements of a flat tensor).
  kernels::Attrs cut = attrs({{"start", std::vector<int64_t>{0}},
                              {"limit", std::vector<int64_t>{1001}},
                              {"stride", std::vector<int64_t>{1}}});
  for (auto t : {bf16, f16}) {
    runCase({"slice", {t({4, 6, 8})}, {t({4, 2, 2})}, sl});
    runCase({"slice", {t({2, 5, 12})}, {t({2, 5, 4})},
             attrs({{"start", std::vector<int64_t>{0, 0, 4}},
                    {"limit", std::vector<int64_t>{2, 5, 8}},
                    {"stride", std::vector<int64_t>{1, 1, 1}}})});
    runCase({"slice", {t({1002})}, {t({1001})}, cut});
  }
  // Zeros (a memset), another value (a store kernel), and enough elements for several blocks.
  runCase({"fill", {}, {f32({1000, 37})}, attrs({{"value", 0.0}})});
  runCase({"fill", {}, {f64({3, 5})}, attrs({{"value", -2.5}})});
  runCase({"fill", {}, {f32({70000})}, attrs({{"value", 3.0}})});
}

TEST(CudaOps, Attention) {
  struct Shape3 {
    int64_t B, T, C, H;
    bool causal;
  };
  // Head sizes 16, 64 and 96 (the three kernel widths), T not a multiple of any tile.
  for (Shape3 s : {Shape3{2, 37, 32, 2, true}, Shape3{1, 130, 128, 2, false}, Shape3{1, 130, 128, 2, true},
                   Shape3{2, 70, 192, 2, true}}) {
    SCOPED_TRACE("T " + std::to_string(s.T) + ", C " + std::to_string(s.C) + (s.causal ? ", causal" : ""));
    kernels::Attrs a = attrs({{"num_heads", s.H}, {"causal", s.causal}});
    TensorType t = f32({s.B, s.T, s.C});
    runCase({"attention", {t, t, t}, {t}, a});
    runCase({"attention_grad", {t, t, t, t}, {t, t, t}, a});
    // The saved output and logsumexp are inputs: random ones test the same formula.
    TensorType lse = f32({s.B, s.H, s.T});
    runCase({"attention_grad_stats", {t, t, t, t, lse, t}, {t, t, t}, a});
  }
  TensorType d = f64({2, 19, 16});
  kernels::Attrs a = attrs({{"num_heads", int64_t{2}}, {"causal", true}});
  runCase({"attention", {d, d, d}, {d}, a});
  runCase({"attention_grad", {d, d, d, d}, {d, d, d}, a});
}

// The decode ops, at random offsets that fit (the offset input is drawn below
// idRange): a dynamic slice of a position table, cache rows written (not in
// place: the harness gives every output its own buffer), and new queries
// attending over a cache longer than a key tile, grouped-query heads too.
TEST(CudaOps, DecodeOps) {
  for (int64_t size : {1, 5}) {
    OpCase c{"dynamic_slice", {f32({40, 24}), i32({})}, {f32({size, 24})},
             attrs({{"axis", int64_t{0}}, {"start", int64_t{2}}, {"size", size}})};
    c.idRange = 40 - 2 - size + 1;
    runCase(c);
  }
  for (int64_t C : {1, 7}) {
    OpCase w{"cache_write", {f32({1, 70, 32}), f32({1, C, 32}), i32({})}, {f32({1, 70, 32})}, {}};
    w.idRange = 70 - C + 1;
    runCase(w);
    for (int64_t kv : {4, 2}) {
      OpCase a{"cached_attention", {f32({1, C, 64}), f32({1, 70, 16 * kv}), f32({1, 70, 16 * kv}), i32({})},
               {f32({1, C, 64})}, attrs({{"num_heads", int64_t{4}}, {"num_kv_heads", kv}})};
      a.idRange = 70 - C + 1;
      runCase(a);
    }
  }
}

// The zoo's ops: the unary math (log, sqrt, rsqrt on positive inputs),
// comparisons with broadcasting, where, concat, reduce_max, rms_norm, and
// grouped-query attention (4 query heads over 1 and 2 key/value heads).
TEST(CudaOps, ZooMath) {
  for (const char *op : {"tanh", "sigmoid", "log_sigmoid", "relu", "silu", "exp", "sin", "cos", "stop_gradient"}) {
    runCase({op, {f32({3, 333})}, {f32({3, 333})}, {}});
    runCase({op, {f64({257})}, {f64({257})}, {}});
  }
  for (const char *op : {"log", "sqrt", "rsqrt"}) {
    OpCase c{op, {f32({3, 333})}, {f32({3, 333})}, {}};
    c.positive = true;
    runCase(c);
  }
  for (const char *op : {"gt", "ge", "lt", "le", "eq", "ne"}) {
    runCase({op, {f32({4, 6, 8}), f32({8})}, {f32({4, 6, 8})}, {}});
    runCase({op, {f32({4, 1, 8}), f32({})}, {f32({4, 1, 8})}, {}});
  }
  runCase({"where", {f32({4, 6, 8}), f32({4, 6, 8}), f32({8})}, {f32({4, 6, 8})}, {}});
  runCase({"where", {f32({4, 1, 8}), f32({1, 6, 1}), f32({})}, {f32({4, 6, 8})}, {}});
}

/* Every op of the elementwise table (contract/elementwise.h), one kernel each on
   both sides generated from the same scalar form: a new elementwise op is covered
   here without naming it. Operands broadcast where the op's do. */
TEST(CudaOps, EveryElementwiseOpOfTheTable) {
  for (const elementwise::ElementwiseOp &op : elementwise::allOps()) {
    const std::string name = op.name;
    const bool positive = name == "log" || name == "sqrt" || name == "rsqrt" || name == "div";
    for (bool f64 : {false, true}) {
      auto t = [&](Shape s) { return f64 ? TensorType{DType::F64, s} : TensorType{DType::F32, s}; };
      OpCase c{op.name, {}, {t({4, 6, 8})}, {}};
      for (int k = 0; k < op.arity; ++k)
        c.in.push_back(op.broadcasts && k == op.arity - 1 ? t({8}) : t({4, 6, 8}));
      c.positive = positive;
      SCOPED_TRACE(name + (f64 ? " f64" : " f32"));
      runCase(c);
    }
  }
}

/* lm.where_int selects ids by a 0/1 mask (a padding-mask pattern: both values
   taken), f32 and f64 masks, with broadcasting of the mask and of either value. */
TEST(CudaOps, WhereInt) {
  for (OpCase c : {OpCase{"where_int", {f32({5, 8}), i32({5, 8}), i32({8})}, {i32({5, 8})}, {}, 30522},
                   OpCase{"where_int", {f64({5, 8}), i32({1}), i32({5, 8})}, {i32({5, 8})}, {}, 30522}}) {
    c.paddingMask = 0;
    runCase(c);
  }
  runCase({"where_int", {f32({}), i32({3, 1, 4}), i32({6, 1})}, {i32({3, 6, 4})}, {}, 300});
}

TEST(CudaOps, ZooShapes) {
  runCase({"concat", {f32({2, 5, 7}), f32({2, 5, 3})}, {f32({2, 5, 10})}, attrs({{"axis", int64_t{2}}})});
  runCase({"concat", {f32({2, 5, 7}), f32({1, 5, 7})}, {f32({3, 5, 7})}, attrs({{"axis", int64_t{0}}})});
  // A middle axis, f64 (8-byte rows), and an operand with no elements.
  runCase({"concat", {f64({2, 3, 4}), f64({2, 5, 4})}, {f64({2, 8, 4})}, attrs({{"axis", int64_t{1}}})});
  runCase({"concat", {f32({2, 0, 4}), f32({2, 5, 4})}, {f32({2, 5, 4})}, attrs({{"axis", int64_t{1}}})});
  runCase({"reduce_max", {f32({4, 6, 33})}, {f32({4, 6, 1})}, attrs({{"axes", std::vector<int64_t>{2}}})});
  runCase({"reduce_max", {f64({4, 6, 8})}, {f64({1, 6, 1})}, attrs({{"axes", std::vector<int64_t>{0, 2}}})});
  runCase({"rms_norm", {f32({4, 6, 32}), f32({32})}, {f32({4, 6, 32})}, {}});
  runCase({"rms_norm_grad", {f32({70, 40}), f32({40}), f32({70, 40})}, {f32({70, 40}), f32({40})}, {}});
  runCase({"rms_norm_grad", {f64({2, 33, 17}), f64({17}), f64({2, 33, 17})}, {f64({2, 33, 17}), f64({17})}, {}});
}

TEST(CudaOps, GroupedQueryAttention) {
  for (int64_t kv : {1, 2})
    for (bool causal : {true, false}) {
      SCOPED_TRACE("kv heads " + std::to_string(kv) + (causal ? ", causal" : ""));
      kernels::Attrs a = attrs({{"num_heads", int64_t{4}}, {"causal", causal}, {"num_kv_heads", kv}});
      TensorType q = f32({2, 70, 64}), k = f32({2, 70, 16 * kv});
      runCase({"attention", {q, k, k}, {q}, a});
      runCase({"attention_grad", {q, k, k, q}, {q, k, k}, a});
    }
}

/* With TF32 GEMMs and LMRT_CUDA_ATTENTION=tensor-cores, f32 attention with heads of at
   most 64 columns runs on tensor cores (runtime/cuda/attention_tc.cuh): every form of
   the op, at TF32's tolerance. */
TEST(CudaOps, AttentionOnTensorCores) {
  setenv("LMRT_CUDA_ATTENTION", "tensor-cores", 1);
  for (AttnShape c : {AttnShape{2, 37, 37, 2, 2, 16, true}, AttnShape{1, 130, 130, 2, 2, 64, true},
                      AttnShape{2, 70, 70, 4, 2, 32, false}, AttnShape{3, 37, 130, 2, 2, 16, false},
                      AttnShape{2, 100, 33, 4, 4, 64, false}, AttnShape{2, 70, 70, 4, 1, 64, true}}) {
    SCOPED_TRACE("Tq " + std::to_string(c.Tq) + ", Tk " + std::to_string(c.Tk) + ", Dh " + std::to_string(c.Dh) +
                 (c.causal ? ", causal" : ""));
    for (OpCase &oc : attentionForms(c)) {
      oc.tf32 = true;
      runCase(oc);
    }
  }
  unsetenv("LMRT_CUDA_ATTENTION");
}

/* In a bf16 or fp16 plan (OpCall::lowPrecision), attention without a bias, segments
   or dropout runs on 16-bit tensor cores (runtime/cuda/attention_mma.cuh): every form
   of the op at the 16-bit tolerances, causal and not, ragged T, padding with a wholly
   masked row, grouped-query heads, cross-attention both ways, head sizes 32, 64, 96
   (on the 128 kernel) and 128, cached_attention's offset, and biased_attention without
   a bias (the same kernels) and with one (the CUDA-core kernels). */
TEST(CudaOps, AttentionOn16BitTensorCores) {
  setenv("LMRT_CUDA_ATTENTION", "tensor-cores", 1);  // opt-in until a GPU has run them (attention.cu)
  for (DType low : {DType::BF16, DType::F16})
    for (AttnShape c : {AttnShape{1, 100, 100, 2, 2, 64, true}, AttnShape{1, 100, 100, 1, 1, 64, false},
                        AttnShape{1, 70, 70, 2, 2, 128, true}, AttnShape{2, 37, 37, 2, 1, 32, true},
                        AttnShape{2, 70, 70, 4, 2, 64, true}, AttnShape{1, 40, 40, 2, 2, 96, false},
                        AttnShape{3, 37, 130, 2, 2, 32, false}, AttnShape{2, 100, 33, 4, 4, 64, false},
                        AttnShape{2, 1030, 1030, 2, 2, 64, true}}) {
      SCOPED_TRACE(std::string(low == DType::BF16 ? "bf16" : "f16") + ", Tq " + std::to_string(c.Tq) + ", Tk " +
                   std::to_string(c.Tk) + ", H " + std::to_string(c.H) + "/" + std::to_string(c.Hkv) + ", Dh " +
                   std::to_string(c.Dh) + (c.causal ? ", causal" : ""));
      for (OpCase &oc : attentionForms(c)) {
        oc.lowPrecision = low;
        runCase(oc);
      }
    }
  // biased_attention without a bias, segments or dropout runs the same kernels (at its own scale; the
  // gradient of a rank-0 bias is 0); with a bias it keeps the CUDA-core kernels.
  for (DType low : {DType::BF16, DType::F16})
    for (const Shape &bias : {Shape{}, Shape{1, 2, 70, 70}}) {
      kernels::Attrs a = attrs({{"num_heads", int64_t{2}}, {"causal", true}, {"num_kv_heads", int64_t{2}},
                                {"scale", 0.3}, {"dropout", 0.0}, {"site", int64_t{2}}});
      TensorType q = f32({2, 70, 128}), m = f32({2, 70}), b = f32(bias), none = i32({});
      OpCase fwd{"biased_attention", {q, q, q, m, b, none, none}, {q}, a};
      OpCase bwd{"biased_attention_grad", {q, q, q, m, b, none, none, q}, {q, q, q, b}, a};
      fwd.paddingMask = bwd.paddingMask = 3;
      fwd.lowPrecision = bwd.lowPrecision = low;
      runCase(fwd);
      runCase(bwd);
    }
  // cached_attention: 5 new queries at a random offset (drawn below idRange) over 70 cached keys.
  for (DType low : {DType::BF16, DType::F16})
    for (uint32_t seed : {1u, 2u, 3u}) {
      OpCase oc{"cached_attention", {f32({1, 5, 128}), f32({1, 70, 64}), f32({1, 70, 64}), i32({})}, {f32({1, 5, 128})},
                attrs({{"num_heads", int64_t{4}}, {"num_kv_heads", int64_t{2}}})};
      oc.idRange = 70 - 5 + 1;
      oc.lowPrecision = low;
      runCase(oc, seed);
    }
  unsetenv("LMRT_CUDA_ATTENTION");
}

/* masked_attention and its grad: padding masks (ragged rows, one row wholly masked)
   over keys of another length than the queries (cross-attention), across key tiles,
   grouped heads, causal with a mask, and the three head-size kernels; unmasked
   cross-attention too. */
TEST(CudaOps, MaskedAndCrossAttention) {
  struct Case {
    int64_t B, Tq, Tk, H, Hkv, Dh;
    bool causal;
  };
  for (Case c : {Case{3, 37, 130, 2, 2, 16, false}, Case{3, 70, 70, 4, 2, 64, true}, Case{2, 130, 9, 2, 1, 96, false},
                 Case{4, 65, 65, 2, 2, 64, false}}) {
    SCOPED_TRACE("Tq " + std::to_string(c.Tq) + ", Tk " + std::to_string(c.Tk) + ", Dh " + std::to_string(c.Dh) +
                 (c.causal ? ", causal" : ""));
    kernels::Attrs a = attrs({{"num_heads", c.H}, {"causal", c.causal}, {"num_kv_heads", c.Hkv}});
    TensorType q = f32({c.B, c.Tq, c.H * c.Dh}), k = f32({c.B, c.Tk, c.Hkv * c.Dh}), m = f32({c.B, c.Tk});
    OpCase fwd{"masked_attention", {q, k, k, m}, {q}, a};
    fwd.paddingMask = 3;
    runCase(fwd);
    OpCase bwd{"masked_attention_grad", {q, k, k, m, q}, {q, k, k}, a};
    bwd.paddingMask = 3;
    runCase(bwd);
    if (!c.causal) {
      runCase({"attention", {q, k, k}, {q}, a});
      runCase({"attention_grad", {q, k, k, q}, {q, k, k}, a});
    }
  }
  TensorType d = f64({2, 19, 16}), dm = f64({2, 19});
  kernels::Attrs a = attrs({{"num_heads", int64_t{2}}, {"causal", true}});
  OpCase fwd{"masked_attention", {d, d, d, dm}, {d}, a}, bwd{"masked_attention_grad", {d, d, d, dm, d}, {d, d, d}, a};
  fwd.paddingMask = bwd.paddingMask = 3;
  runCase(fwd);
  runCase(bwd);
}

/* biased_attention and its grad (the bias's gradient kernel too): T5's bias [1, H, T, T]
   with scale 1, ALiBi's [1, H, 1, Tk] with causal and a padding mask, segment ids (random
   in 0 .. 2, so documents interleave), cross-attention with a rank-2 bias, f64; the
   probabilities' dropout (the CPU kernels' mask) with and without a bias. */
TEST(CudaOps, BiasedAttention) {
  struct Case {
    int64_t B, Tq, Tk, H, Hkv, Dh;
    bool causal, masked, segments;
    Shape bias;
    double scale, dropout = 0;
  };
  for (Case c : {Case{2, 70, 70, 2, 2, 64, false, false, false, {1, 2, 70, 70}, 1.0},
                 Case{3, 70, 70, 4, 2, 64, true, true, false, {1, 4, 1, 70}, 0.0},
                 Case{2, 100, 100, 2, 1, 96, true, false, true, {}, 0.0},
                 Case{2, 37, 130, 2, 2, 16, false, true, false, {37, 130}, 0.0},
                 Case{2, 70, 70, 2, 2, 64, false, false, false, {1, 2, 70, 70}, 1.0, 0.1},
                 Case{3, 70, 70, 4, 2, 64, true, true, false, {}, 0.0, 0.5}}) {
    SCOPED_TRACE("Tq " + std::to_string(c.Tq) + ", Tk " + std::to_string(c.Tk) + ", Dh " + std::to_string(c.Dh) +
                 ", dropout " + std::to_string(c.dropout));
    kernels::Attrs a = attrs({{"num_heads", c.H}, {"causal", c.causal}, {"num_kv_heads", c.Hkv}, {"scale", c.scale},
                              {"dropout", c.dropout}, {"site", int64_t{2}}});
    TensorType q = f32({c.B, c.Tq, c.H * c.Dh}), k = f32({c.B, c.Tk, c.Hkv * c.Dh});
    TensorType m = f32(c.masked ? Shape{c.B, c.Tk} : Shape{}), b = f32(c.bias),
               s = i32(c.segments ? Shape{c.B, c.Tq} : Shape{}), key = i32(c.dropout > 0 ? Shape{c.B, 2} : Shape{});
    OpCase fwd{"biased_attention", {q, k, k, m, b, s, key}, {q}, a};
    OpCase bwd{"biased_attention_grad", {q, k, k, m, b, s, key, q}, {q, k, k, b}, a};
    fwd.idRange = bwd.idRange = 3;
    if (c.masked) fwd.paddingMask = bwd.paddingMask = 3;
    runCase(fwd);
    runCase(bwd);
  }
  TensorType d = f64({2, 19, 16}), dm = f64({2, 19}), db = f64({1, 2, 19, 19});
  kernels::Attrs a = attrs({{"num_heads", int64_t{2}}, {"causal", true}});
  OpCase fwd{"biased_attention", {d, d, d, dm, db, i32({2, 19}), i32({})}, {d}, a},
      bwd{"biased_attention_grad", {d, d, d, dm, db, i32({2, 19}), i32({}), d}, {d, d, d, db}, a};
  fwd.paddingMask = bwd.paddingMask = 3;
  fwd.idRange = bwd.idRange = 2;
  runCase(fwd);
  runCase(bwd);
}

}  // namespace
}  // namespace lmrt::cuda::test

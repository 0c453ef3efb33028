// RUN: lmc compile %s --emit=train-mlir | FileCheck %s --check-prefix=PACKED
// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the packed attention ops' gradient (-lm-pack-attention, docs/fusion.md):
// q, k, v are column slices of one parameter qkv [2, 4, 16] (4 query heads of 2
// columns over 2 key/value heads, causal), so the fused plan reads them in place
// with packed_attention_stats and writes qkv's gradient whole with
// packed_attention_grad_stats; the reference plan (--fusion=none) slices and
// concatenates. Both are compared with central finite differences in f64; the
// loss weights every output element by a different constant.
// PACKED: lm.packed_attention_stats %arg0 {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x16xf64>)
// PACKED: lm.packed_attention_grad_stats %arg0,
// PACKED-NOT: lm.concat
func.func @loss(%qkv: tensor<2x4x16xf64> {lm.param = "qkv", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %q = lm.slice %qkv {limit = array<i64: 2, 4, 8>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x16xf64>) -> tensor<2x4x8xf64>
  %k = lm.slice %qkv {limit = array<i64: 2, 4, 12>, start = array<i64: 0, 0, 8>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x16xf64>) -> tensor<2x4x4xf64>
  %v = lm.slice %qkv {limit = array<i64: 2, 4, 16>, start = array<i64: 0, 0, 12>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x16xf64>) -> tensor<2x4x4xf64>
  %y = lm.attention %q, %k, %v {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x8xf64>, tensor<2x4x4xf64>, tensor<2x4x4xf64>) -> tensor<2x4x8xf64>
  %w = lm.constant dense<[[[1.174, -0.729, -0.548, 0.492, 1.270, 0.503, 0.423, -1.204], [1.699, 1.083, -0.628, 1.357, 0.647, 1.116, 0.746, -0.913], [-1.173, -0.695, 0.715, 1.350, -0.582, 1.174, 0.877, 1.593], [-0.983, -0.283, -1.101, 0.410, 1.051, 1.125, -0.556, 0.488]], [[-1.655, -1.311, 0.394, -1.557, 0.853, 1.701, -1.217, 1.142], [1.153, 0.623, -0.316, -0.859, -0.489, -0.269, -0.463, -1.027], [1.470, -1.013, -0.700, -1.741, 1.323, -0.813, 1.368, 0.371], [0.513, -0.642, -0.435, 1.318, 1.204, 1.279, 0.693, -0.378]]]> : tensor<2x4x8xf64>
  %m = lm.mul %y, %w : (tensor<2x4x8xf64>, tensor<2x4x8xf64>) -> tensor<2x4x8xf64>
  %l = lm.sum_to %m : (tensor<2x4x8xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

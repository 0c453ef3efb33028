// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.masked_attention with grouped-query heads (4 query heads over
// 2 key/value heads), cross-attention (3 queries over 5 keys) and a padding mask;
// batch row 1 has every key masked (its output is 0 and it passes no gradient).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result. The mask is a constant: it has no gradient.
func.func @loss(%q: tensor<2x3x8xf64> {lm.param = "q", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %k: tensor<2x5x4xf64> {lm.param = "k", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %v: tensor<2x5x4xf64> {lm.param = "v", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %m = lm.constant dense<[[1.0, 1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<2x5xf64>
  %1 = lm.masked_attention %q, %k, %v, %m {causal = false, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x3x8xf64>, tensor<2x5x4xf64>, tensor<2x5x4xf64>, tensor<2x5xf64>) -> tensor<2x3x8xf64>
  %2 = lm.constant dense<[[[0.025, 1.188, -0.444, 0.314, -1.410, -0.360, -0.566, -1.119],  [1.012, -0.386, 1.532, 0.288, 0.336, 0.442, 0.565, -1.117],  [-0.191, -0.833, -0.312, -1.291, 1.497, -0.912, 0.550, -0.639]], [[1.197, 0.519, -1.179, 1.104, 1.424, 1.293, 0.223, -1.135],  [-0.984, 1.369, 0.167, -1.022, 1.229, 0.453, 0.223, -0.396],  [-0.285, -0.834, -1.478, 1.204, -0.103, 0.152, -0.569, 0.804]]]> : tensor<2x3x8xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x8xf64>, tensor<2x3x8xf64>) -> tensor<2x3x8xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x8xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

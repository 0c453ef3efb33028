// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.masked_attention with a key padding mask and cross-attention
// (4 queries over 5 keys, 2 heads): batch row 0 is padded at the end, row 1
// masks keys in the middle.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result. The mask is a constant: it has no gradient.
func.func @loss(%q: tensor<2x4x6xf64> {lm.param = "q", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %k: tensor<2x5x6xf64> {lm.param = "k", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %v: tensor<2x5x6xf64> {lm.param = "v", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %m = lm.constant dense<[[1.0, 1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 1.0, 1.0]]> : tensor<2x5xf64>
  %1 = lm.masked_attention %q, %k, %v, %m {causal = false, num_heads = 2 : i64} : (tensor<2x4x6xf64>, tensor<2x5x6xf64>, tensor<2x5x6xf64>, tensor<2x5xf64>) -> tensor<2x4x6xf64>
  %2 = lm.constant dense<[[[0.400, 1.271, 0.882, -0.879, -0.639, 1.195],  [-1.583, 1.028, 0.951, -0.103, -0.630, -0.709],  [-0.784, -0.176, 0.015, 0.171, 1.586, 0.937],  [0.391, 1.565, -0.911, -1.087, 0.360, -1.459]], [[-1.486, 0.048, -0.108, 1.335, 0.414, 0.045],  [-0.010, -0.808, -1.562, -0.984, 0.615, -0.958],  [-0.417, -1.588, 1.056, -1.106, -0.744, 1.217],  [0.031, 1.111, 0.447, 0.774, -1.307, 0.132]]]> : tensor<2x4x6xf64>
  %3 = lm.mul %1, %2 : (tensor<2x4x6xf64>, tensor<2x4x6xf64>) -> tensor<2x4x6xf64>
  %4 = lm.sum_to %3 : (tensor<2x4x6xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

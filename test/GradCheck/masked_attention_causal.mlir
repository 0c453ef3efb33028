// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.masked_attention with the causal mask and a key padding mask:
// key 0 of batch row 0 is masked, so query 0 there sees no key at all (output 0,
// no gradient); batch row 1 is padded at the end.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result. The mask is a constant: it has no gradient.
func.func @loss(%q: tensor<2x4x6xf64> {lm.param = "q", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %k: tensor<2x4x6xf64> {lm.param = "k", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %v: tensor<2x4x6xf64> {lm.param = "v", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %m = lm.constant dense<[[0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]]> : tensor<2x4xf64>
  %1 = lm.masked_attention %q, %k, %v, %m {causal = true, num_heads = 2 : i64} : (tensor<2x4x6xf64>, tensor<2x4x6xf64>, tensor<2x4x6xf64>, tensor<2x4xf64>) -> tensor<2x4x6xf64>
  %2 = lm.constant dense<[[[-1.519, -0.409, -1.503, -1.207, 1.495, 0.505],  [-0.230, 0.076, 1.193, -0.499, 0.289, 0.588],  [-0.463, 0.061, 0.849, 1.309, -1.117, 1.387],  [-1.583, 0.810, 0.994, -1.162, -0.260, 1.009]], [[-1.554, 0.411, 0.938, 0.042, 0.723, -0.875],  [-0.965, -0.438, -1.026, -0.493, 1.434, 0.235],  [-0.512, -0.731, 1.447, -0.178, 1.537, 0.050],  [0.068, 1.269, 0.777, 0.258, -0.235, 1.210]]]> : tensor<2x4x6xf64>
  %3 = lm.mul %1, %2 : (tensor<2x4x6xf64>, tensor<2x4x6xf64>) -> tensor<2x4x6xf64>
  %4 = lm.sum_to %3 : (tensor<2x4x6xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

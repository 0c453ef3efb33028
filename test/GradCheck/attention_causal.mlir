// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.attention with a causal mask (2 heads; q, k and v).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%q: tensor<2x4x6xf64> {lm.param = "q", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %k: tensor<2x4x6xf64> {lm.param = "k", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %v: tensor<2x4x6xf64> {lm.param = "v", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.attention %q, %k, %v {causal = true, num_heads = 2 : i64} : (tensor<2x4x6xf64>, tensor<2x4x6xf64>, tensor<2x4x6xf64>) -> tensor<2x4x6xf64>
  %2 = lm.constant dense<[[[-1.715, 1.408, 1.288, -0.900, 1.636, 1.078], [-1.199, 0.344, 1.096, -1.148, 0.735, 1.564], [-0.934, 1.675, 0.481, -1.423, 1.422, 1.434], [-0.885, 0.431, 1.110, -0.399, 0.568, 1.054]], [[-0.619, 0.726, 0.301, -1.219, 1.409, 0.927], [-0.810, 1.343, 0.778, -1.203, 1.290, 0.461], [-1.615, 1.132, 0.275, -1.270, 0.670, 1.670], [-1.247, 1.196, 0.852, -1.657, 0.629, 1.275]]]> : tensor<2x4x6xf64>
  %3 = lm.mul %1, %2 : (tensor<2x4x6xf64>, tensor<2x4x6xf64>) -> tensor<2x4x6xf64>
  %4 = lm.sum_to %3 : (tensor<2x4x6xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.attention without a mask (2 heads; q, k and v).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%q: tensor<2x4x6xf64> {lm.param = "q", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %k: tensor<2x4x6xf64> {lm.param = "k", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %v: tensor<2x4x6xf64> {lm.param = "v", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.attention %q, %k, %v {causal = false, num_heads = 2 : i64} : (tensor<2x4x6xf64>, tensor<2x4x6xf64>, tensor<2x4x6xf64>) -> tensor<2x4x6xf64>
  %2 = lm.constant dense<[[[-0.748, 0.640, 1.445, -1.140, 1.404, 0.590], [-0.870, 1.125, 1.096, -0.454, 0.808, 0.284], [-1.148, 1.526, 0.622, -0.607, 1.198, 0.629], [-1.578, 0.776, 1.312, -0.972, 0.454, 1.273]], [[-1.358, 1.074, 0.629, -0.723, 1.169, 1.444], [-0.315, 0.341, 1.250, -0.481, 0.813, 1.023], [-1.552, 1.287, 0.426, -0.937, 1.066, 0.862], [-0.437, 0.676, 0.278, -1.365, 0.778, 1.307]]]> : tensor<2x4x6xf64>
  %3 = lm.mul %1, %2 : (tensor<2x4x6xf64>, tensor<2x4x6xf64>) -> tensor<2x4x6xf64>
  %4 = lm.sum_to %3 : (tensor<2x4x6xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.layer_norm (x, gamma and beta).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x6xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %gamma: tensor<6xf64> {lm.param = "gamma", lm.init = {kind = "normal", mean = 1.0 : f64, std = 0.5 : f64}},
                %beta: tensor<6xf64> {lm.param = "beta", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.layer_norm %x, %gamma, %beta {epsilon = 1.0e-05 : f64} : (tensor<2x3x6xf64>, tensor<6xf64>, tensor<6xf64>) -> tensor<2x3x6xf64>
  %2 = lm.constant dense<[[[-1.415, 1.419, 0.857, -1.165, 1.613, 1.569], [-1.270, 0.269, 1.318, -0.644, 1.262, 0.265], [-1.529, 0.859, 0.620, -0.947, 1.728, 1.132]], [[-1.357, 0.993, 1.042, -0.797, 0.955, 1.287], [-0.285, 1.299, 1.083, -0.288, 1.642, 1.328], [-1.186, 0.538, 0.507, -1.084, 1.079, 1.116]]]> : tensor<2x3x6xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x6xf64>, tensor<2x3x6xf64>) -> tensor<2x3x6xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x6xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

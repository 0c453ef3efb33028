// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.log (on x^2 + 0.5, which is positive).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "uniform", low = 0.5 : f64, high = 2.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %h = lm.constant dense<0.5> : tensor<f64>
  %s = lm.mul %x, %x : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %p = lm.add %s, %h : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %y = lm.log %p : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[-0.888, -0.653, -1.202, 0.376, -0.350], [-0.931, 1.741, 1.640, 1.183, -1.040], [-1.657, -0.643, -0.553, 1.193, -0.685]], [[-0.656, -1.742, -0.273, -1.021, -1.652], [-1.237, 1.235, 1.705, 1.282, -0.764], [-0.857, 1.723, -0.271, 0.896, -0.377]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

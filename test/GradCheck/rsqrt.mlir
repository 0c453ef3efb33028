// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.rsqrt (on x^2 + 0.5, which is positive).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "uniform", low = 0.5 : f64, high = 2.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %h = lm.constant dense<0.5> : tensor<f64>
  %s = lm.mul %x, %x : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %p = lm.add %s, %h : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %y = lm.rsqrt %p : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[-0.935, -1.372, -1.239, -1.369, 0.628], [-1.519, -1.344, -0.596, 0.991, 0.365], [1.400, -0.366, -0.748, 1.182, -0.269]], [[-0.979, -1.288, 0.686, 0.947, 1.401], [-0.718, -1.654, -0.684, -1.480, 1.741], [0.565, -0.362, -0.463, 1.679, -1.155]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

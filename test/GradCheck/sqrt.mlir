// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.sqrt (on x^2 + 0.5, which is positive).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "uniform", low = 0.5 : f64, high = 2.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %h = lm.constant dense<0.5> : tensor<f64>
  %s = lm.mul %x, %x : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %p = lm.add %s, %h : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %y = lm.sqrt %p : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[1.556, 1.148, 0.318, -0.486, 0.255], [1.693, 0.617, 0.577, -0.252, 0.376], [1.004, -0.622, -0.386, -0.466, -0.841]], [[0.706, -0.377, -1.236, 1.396, 0.474], [-0.316, 1.351, -1.615, -1.490, -0.378], [-0.450, 1.689, 1.504, -1.192, -0.984]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

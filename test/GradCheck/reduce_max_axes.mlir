// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.reduce_max over axes 0 and 2.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %y = lm.reduce_max %x {axes = array<i64: 0, 2>} : (tensor<2x3x5xf64>) -> tensor<1x3x1xf64>
  %w = lm.constant dense<[[[-0.643], [1.636], [0.256]]]> : tensor<1x3x1xf64>
  %m = lm.mul %y, %w : (tensor<1x3x1xf64>, tensor<1x3x1xf64>) -> tensor<1x3x1xf64>
  %l = lm.sum_to %m : (tensor<1x3x1xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

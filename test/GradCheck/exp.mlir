// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.exp.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %y = lm.exp %x : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[-1.510, -0.875, 0.913, -1.257, 0.360], [1.426, -1.659, 0.464, -1.701, -1.370], [-0.847, 0.494, -0.492, 1.741, 0.759]], [[-0.785, -1.333, -0.757, 0.911, -0.827], [1.018, -0.419, -1.708, -0.376, 0.309], [-0.656, -1.480, 0.859, 1.301, -0.669]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

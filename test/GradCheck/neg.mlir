// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.neg.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.neg %x : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %2 = lm.constant dense<[[[-1.666, 1.237, 0.649, -1.712, 0.872], [0.785, -0.918, 0.319, 0.608, -1.459], [1.536, 1.387, -1.677, 1.123, 0.870]], [[-1.591, 0.916, 1.749, -1.632, 0.762], [0.256, -1.109, 0.976, 0.657, -0.298], [1.224, 0.880, -0.482, 1.002, 0.893]]]> : tensor<2x3x5xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x5xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.take_along_axis along the last axis, with an index that
// broadcasts over the first dimension and repeats positions (their gradients
// add up) and leaves one out (its gradient is 0).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %i = lm.constant dense<[[[4, 0, 0, 2], [1, 3, 2, 1], [0, 4, 3, 3]]]> : tensor<1x3x4xi32>
  %y = lm.take_along_axis %x, %i {axis = 2 : i64} : (tensor<2x3x5xf64>, tensor<1x3x4xi32>) -> tensor<2x3x4xf64>
  %w = lm.constant dense<[[[-1.067, 1.133, 1.414, -0.387], [0.862, -1.548, 0.628, 1.207], [1.338, 0.936, -1.425, 1.083]], [[-1.679, 0.398, 0.964, -1.103], [0.264, -1.202, 1.340, 1.653], [0.606, 0.785, -1.479, 0.874]]]> : tensor<2x3x4xf64>
  %m = lm.mul %y, %w : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %l = lm.sum_to %m : (tensor<2x3x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

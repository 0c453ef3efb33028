// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.take_along_axis along a middle axis (elements after the
// axis are strided), the index broadcasting over the last dimension and taking
// more positions than the axis has.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x2xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %i = lm.constant dense<[[[2], [0], [2], [1]], [[1], [1], [0], [2]]]> : tensor<2x4x1xi32>
  %y = lm.take_along_axis %x, %i {axis = 1 : i64} : (tensor<2x3x2xf64>, tensor<2x4x1xi32>) -> tensor<2x4x2xf64>
  %w = lm.constant dense<[[[-0.286, -0.411], [1.681, 1.435], [1.472, -1.642], [-0.263, 1.484]], [[-1.161, 1.542], [0.793, -1.018], [1.379, -0.862], [-0.973, 0.491]]]> : tensor<2x4x2xf64>
  %m = lm.mul %y, %w : (tensor<2x4x2xf64>, tensor<2x4x2xf64>) -> tensor<2x4x2xf64>
  %l = lm.sum_to %m : (tensor<2x4x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

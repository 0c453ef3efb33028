// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.cos.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %y = lm.cos %x : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[-0.506, 0.765, 0.634, 0.859, -0.701], [0.430, -0.363, 1.076, 1.609, 0.891], [-0.616, -0.763, -0.729, 0.638, -1.581]], [[0.824, -0.815, 1.378, 0.666, 0.439], [-0.389, -0.827, 0.898, 1.523, -0.441], [1.314, 1.702, 0.250, 1.645, 1.708]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

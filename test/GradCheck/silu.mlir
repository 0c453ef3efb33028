// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.silu.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %y = lm.silu %x : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[-1.040, -0.901, -1.489, -0.292, -0.689], [-1.396, 0.639, 1.501, -1.615, 1.597], [1.491, -1.048, -1.559, -1.163, -0.509]], [[1.179, -1.085, 1.273, 1.426, -1.575], [-0.623, 0.313, -1.012, -1.390, -0.915], [-1.289, 1.012, 1.012, -1.299, 1.634]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.reshape.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x4xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.reshape %x : (tensor<2x3x4xf64>) -> tensor<4x6xf64>
  %2 = lm.constant dense<[[-0.831, 0.795, 1.060, -0.959, 1.447, 0.795], [-0.572, 1.657, 1.702, -1.643, 0.586, 0.588], [-1.349, 1.193, 1.343, -0.790, 0.835, 1.036], [-0.680, 0.842, 0.623, -1.356, 0.781, 0.647]]> : tensor<4x6xf64>
  %3 = lm.mul %1, %2 : (tensor<4x6xf64>, tensor<4x6xf64>) -> tensor<4x6xf64>
  %4 = lm.sum_to %3 : (tensor<4x6xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

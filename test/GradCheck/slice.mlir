// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.slice: a strided slice and an overlapping contiguous one
// of the same tensor (their gradients add up).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<5x6xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.slice %x {start = array<i64: 1, 0>, limit = array<i64: 5, 6>, stride = array<i64: 2, 3>} : (tensor<5x6xf64>) -> tensor<2x2xf64>
  %2 = lm.constant dense<[[-1.104, 0.383], [0.945, -1.505]]> : tensor<2x2xf64>
  %3 = lm.mul %1, %2 : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  %4 = lm.sum_to %3 : (tensor<2x2xf64>) -> tensor<f64>
  %5 = lm.slice %x {start = array<i64: 0, 1>, limit = array<i64: 4, 5>, stride = array<i64: 1, 1>} : (tensor<5x6xf64>) -> tensor<4x4xf64>
  %6 = lm.constant dense<[[-1.550, 1.170, 1.455, -1.396], [0.407, 1.303, -0.897, 0.773], [0.427, -0.905, 0.799, 1.575], [-0.457, 1.689, 0.777, -0.638]]> : tensor<4x4xf64>
  %7 = lm.mul %5, %6 : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
  %8 = lm.sum_to %7 : (tensor<4x4xf64>) -> tensor<f64>
  %9 = lm.add %4, %8 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %9 : tensor<f64>
}

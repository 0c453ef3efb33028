// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.mul with NumPy broadcasting on both operands
// ([3, 1] op [2, 1, 4]) and without broadcasting.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<3x1xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %y: tensor<2x1x4xf64> {lm.param = "y", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %z: tensor<3x1xf64> {lm.param = "z", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.mul %x, %y : (tensor<3x1xf64>, tensor<2x1x4xf64>) -> tensor<2x3x4xf64>
  %2 = lm.constant dense<[[[-1.137, 0.326, 0.794, -1.539], [0.292, 0.648, -1.307, 1.662], [0.643, -0.578, 1.691, 0.293]], [[-1.014, 1.545, 1.366, -1.641], [1.100, 1.284, -0.251, 0.417], [1.009, -1.497, 0.978, 0.819]]]> : tensor<2x3x4xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x4xf64>) -> tensor<f64>
  %5 = lm.mul %x, %z : (tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %6 = lm.constant dense<[[-1.111], [1.685], [0.503]]> : tensor<3x1xf64>
  %7 = lm.mul %5, %6 : (tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %8 = lm.sum_to %7 : (tensor<3x1xf64>) -> tensor<f64>
  %9 = lm.add %4, %8 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %9 : tensor<f64>
}

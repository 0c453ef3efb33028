// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.div with NumPy broadcasting on both operands
// ([3, 1] op [2, 1, 4]) and without broadcasting.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<3x1xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %y: tensor<2x1x4xf64> {lm.param = "y", lm.init = {kind = "uniform", low = 1.0 : f64, high = 2.0 : f64}},
                %z: tensor<3x1xf64> {lm.param = "z", lm.init = {kind = "uniform", low = 1.0 : f64, high = 2.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.div %x, %y : (tensor<3x1xf64>, tensor<2x1x4xf64>) -> tensor<2x3x4xf64>
  %2 = lm.constant dense<[[[-0.763, 0.465, 1.607, -0.543], [0.928, 0.345, -1.056, 0.947], [1.445, -0.620, 1.420, 0.901]], [[-0.814, 1.519, 0.720, -0.625], [0.364, 1.526, -1.588, 1.421], [0.360, -0.946, 1.373, 1.245]]]> : tensor<2x3x4xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x4xf64>) -> tensor<f64>
  %5 = lm.div %x, %z : (tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %6 = lm.constant dense<[[-1.545], [0.380], [0.349]]> : tensor<3x1xf64>
  %7 = lm.mul %5, %6 : (tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %8 = lm.sum_to %7 : (tensor<3x1xf64>) -> tensor<f64>
  %9 = lm.add %4, %8 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %9 : tensor<f64>
}

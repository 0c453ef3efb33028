// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.sub with NumPy broadcasting on both operands
// ([3, 1] op [2, 1, 4]) and without broadcasting.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<3x1xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %y: tensor<2x1x4xf64> {lm.param = "y", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %z: tensor<3x1xf64> {lm.param = "z", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.sub %x, %y : (tensor<3x1xf64>, tensor<2x1x4xf64>) -> tensor<2x3x4xf64>
  %2 = lm.constant dense<[[[-0.925, 0.271, 1.459, -1.742], [0.536, 1.342, -0.596, 1.221], [1.628, -1.235, 1.401, 0.386]], [[-1.556, 1.311, 1.067, -0.481], [0.999, 0.793, -1.006, 0.614], [0.633, -0.507, 0.849, 0.996]]]> : tensor<2x3x4xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x4xf64>) -> tensor<f64>
  %5 = lm.sub %x, %z : (tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %6 = lm.constant dense<[[-0.789], [0.304], [1.137]]> : tensor<3x1xf64>
  %7 = lm.mul %5, %6 : (tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %8 = lm.sum_to %7 : (tensor<3x1xf64>) -> tensor<f64>
  %9 = lm.add %4, %8 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %9 : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.add with NumPy broadcasting on both operands
// ([3, 1] op [2, 1, 4]) and without broadcasting.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<3x1xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %y: tensor<2x1x4xf64> {lm.param = "y", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %z: tensor<3x1xf64> {lm.param = "z", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.add %x, %y : (tensor<3x1xf64>, tensor<2x1x4xf64>) -> tensor<2x3x4xf64>
  %2 = lm.constant dense<[[[-0.605, 1.304, 0.692, -1.388], [1.524, 1.549, -1.364, 1.229], [0.353, -1.381, 0.587, 1.233]], [[-0.445, 0.254, 1.402, -0.609], [1.093, 1.658, -0.422, 0.441], [1.437, -0.456, 1.714, 1.640]]]> : tensor<2x3x4xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x4xf64>) -> tensor<f64>
  %5 = lm.add %x, %z : (tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %6 = lm.constant dense<[[-1.579], [0.624], [0.293]]> : tensor<3x1xf64>
  %7 = lm.mul %5, %6 : (tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %8 = lm.sum_to %7 : (tensor<3x1xf64>) -> tensor<f64>
  %9 = lm.add %4, %8 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %9 : tensor<f64>
}

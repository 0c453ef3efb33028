// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.matmul with both operands transposed.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%a: tensor<4x3xf64> {lm.param = "a", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b: tensor<5x4xf64> {lm.param = "b", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : (tensor<4x3xf64>, tensor<5x4xf64>) -> tensor<3x5xf64>
  %2 = lm.constant dense<[[-0.438, 1.162, 1.074, -1.300, 1.606], [0.845, -1.498, 1.178, 0.274, -0.812], [0.414, 1.090, -0.805, 0.475, 1.456]]> : tensor<3x5xf64>
  %3 = lm.mul %1, %2 : (tensor<3x5xf64>, tensor<3x5xf64>) -> tensor<3x5xf64>
  %4 = lm.sum_to %3 : (tensor<3x5xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

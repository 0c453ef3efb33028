// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.matmul.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%a: tensor<3x4xf64> {lm.param = "a", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b: tensor<4x5xf64> {lm.param = "b", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.matmul %a, %b : (tensor<3x4xf64>, tensor<4x5xf64>) -> tensor<3x5xf64>
  %2 = lm.constant dense<[[-1.233, 0.707, 1.262, -0.410, 1.025], [0.984, -1.154, 0.805, 0.635, -0.811], [1.488, 0.509, -0.697, 1.215, 1.434]]> : tensor<3x5xf64>
  %3 = lm.mul %1, %2 : (tensor<3x5xf64>, tensor<3x5xf64>) -> tensor<3x5xf64>
  %4 = lm.sum_to %3 : (tensor<3x5xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

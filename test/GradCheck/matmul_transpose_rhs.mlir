// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.matmul with transpose_rhs.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%a: tensor<3x4xf64> {lm.param = "a", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b: tensor<5x4xf64> {lm.param = "b", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.matmul %a, %b {transpose_rhs = true} : (tensor<3x4xf64>, tensor<5x4xf64>) -> tensor<3x5xf64>
  %2 = lm.constant dense<[[-1.732, 1.451, 0.946, -1.058, 1.188], [0.625, -1.306, 1.324, 1.719, -0.744], [0.918, 1.313, -1.360, 0.509, 0.274]]> : tensor<3x5xf64>
  %3 = lm.mul %1, %2 : (tensor<3x5xf64>, tensor<3x5xf64>) -> tensor<3x5xf64>
  %4 = lm.sum_to %3 : (tensor<3x5xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

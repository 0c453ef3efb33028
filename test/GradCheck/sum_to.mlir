// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.sum_to to a non-scalar shape ([2, 3, 4] -> [3, 1]).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x4xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.sum_to %x : (tensor<2x3x4xf64>) -> tensor<3x1xf64>
  %2 = lm.constant dense<[[-0.573], [0.866], [1.520]]> : tensor<3x1xf64>
  %3 = lm.mul %1, %2 : (tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  %4 = lm.sum_to %3 : (tensor<3x1xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.transpose (a non-self-inverse permutation).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x4xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.transpose %x {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf64>) -> tensor<4x2x3xf64>
  %2 = lm.constant dense<[[[-1.158, 1.213, 1.293], [-0.335, 0.989, 0.472]], [[-1.457, 1.636, 0.310], [-0.313, 1.630, 0.778]], [[-1.443, 1.545, 1.358], [-0.256, 1.527, 0.662]], [[-0.869, 1.538, 0.422], [-0.847, 1.643, 1.552]]]> : tensor<4x2x3xf64>
  %3 = lm.mul %1, %2 : (tensor<4x2x3xf64>, tensor<4x2x3xf64>) -> tensor<4x2x3xf64>
  %4 = lm.sum_to %3 : (tensor<4x2x3xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.softmax.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.softmax %x : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %2 = lm.constant dense<[[[-0.876, 1.234, 0.810, -1.379, 1.169], [0.471, -0.957, 1.487, 1.107, -0.331], [1.449, 0.388, -1.468, 1.645, 1.740]], [[-0.609, 1.141, 1.548, -1.326, 0.796], [0.605, -1.705, 1.711, 1.746, -0.271], [1.452, 0.401, -1.743, 0.558, 0.950]]]> : tensor<2x3x5xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x5xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.embedding (scatter-add; ids come from the input and repeat).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%table: tensor<6x3xf64> {lm.param = "table", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %ids: tensor<2x5xi32> {lm.input = "ids", lm.vocab = 6 : i64}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.embedding %table, %ids : (tensor<6x3xf64>, tensor<2x5xi32>) -> tensor<2x5x3xf64>
  %2 = lm.constant dense<[[[-0.496, 0.924, 0.983], [-0.688, 1.571, 0.786], [-1.616, 0.401, 0.967], [-0.776, 1.116, 1.360], [-0.565, 1.671, 1.461]], [[-1.487, 0.301, 0.701], [-1.175, 0.771, 0.526], [-0.418, 0.971, 0.881], [-0.261, 0.447, 1.134], [-0.487, 1.638, 0.578]]]> : tensor<2x5x3xf64>
  %3 = lm.mul %1, %2 : (tensor<2x5x3xf64>, tensor<2x5x3xf64>) -> tensor<2x5x3xf64>
  %4 = lm.sum_to %3 : (tensor<2x5x3xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

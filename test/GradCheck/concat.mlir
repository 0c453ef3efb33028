// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.concat along the last axis.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%a: tensor<2x3x5xf64> {lm.param = "a", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b: tensor<2x3x2xf64> {lm.param = "b", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %y = lm.concat %a, %b {axis = 2 : i64} : (tensor<2x3x5xf64>, tensor<2x3x2xf64>) -> tensor<2x3x7xf64>
  %w = lm.constant dense<[[[-0.286, -0.411, 1.681, 1.435, 1.472, -1.642, -0.263], [1.484, -1.161, 1.542, 0.793, -1.018, 1.379, -0.862], [-0.973, 0.491, 1.575, -0.647, -0.563, 0.998, 0.510]], [[-0.875, -1.372, -1.420, 0.691, 0.809, 0.549, -0.529], [-0.480, -0.740, 0.627, -1.011, -1.224, -1.230, -0.403], [1.574, -1.511, 0.311, 0.599, -0.534, -1.645, 1.019]]]> : tensor<2x3x7xf64>
  %m = lm.mul %y, %w : (tensor<2x3x7xf64>, tensor<2x3x7xf64>) -> tensor<2x3x7xf64>
  %l = lm.sum_to %m : (tensor<2x3x7xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

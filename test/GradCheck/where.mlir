// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.where (both branches, the second broadcast from [5]).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b: tensor<5xf64> {lm.param = "b", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %z = lm.constant dense<0.0> : tensor<f64>
  %c = lm.gt %x, %z : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %xx = lm.mul %x, %x : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %y = lm.where %c, %xx, %b : (tensor<2x3x5xf64>, tensor<2x3x5xf64>, tensor<5xf64>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[-0.718, -0.596, -0.648, 0.414, 1.165], [-0.978, -1.673, -1.633, -0.569, -0.873], [-0.526, 1.597, 1.349, -1.647, 0.536]], [[0.298, 1.509, 0.914, -0.254, 0.371], [1.683, -1.092, -0.820, 1.483, 0.382], [0.544, 0.540, 1.356, 0.295, 0.622]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

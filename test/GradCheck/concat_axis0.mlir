// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.concat along the first axis.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%a: tensor<2x3x5xf64> {lm.param = "a", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b: tensor<1x3x5xf64> {lm.param = "b", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %y = lm.concat %a, %b {axis = 0 : i64} : (tensor<2x3x5xf64>, tensor<1x3x5xf64>) -> tensor<3x3x5xf64>
  %w = lm.constant dense<[[[-0.924, 1.412, -0.409, 0.576, 0.760], [-0.556, 0.307, -1.472, 0.863, 0.528], [0.367, -1.443, 0.345, -1.444, -1.209]], [[-1.230, 1.293, 1.732, 0.877, -0.719], [0.871, -1.546, 1.217, 1.342, -1.663], [1.602, 0.420, -0.859, 0.941, -0.445]], [[-1.077, 0.384, 1.356, -0.469, 0.493], [-1.638, -0.826, -0.702, -1.713, 0.722], [0.379, -1.210, -1.182, -1.494, -1.098]]]> : tensor<3x3x5xf64>
  %m = lm.mul %y, %w : (tensor<3x3x5xf64>, tensor<3x3x5xf64>) -> tensor<3x3x5xf64>
  %l = lm.sum_to %m : (tensor<3x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.rms_norm (x and gamma).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x6xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %g: tensor<6xf64> {lm.param = "g", lm.init = {kind = "normal", mean = 1.0 : f64, std = 0.5 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %y = lm.rms_norm %x, %g {epsilon = 1.0e-06 : f64} : (tensor<2x3x6xf64>, tensor<6xf64>) -> tensor<2x3x6xf64>
  %w = lm.constant dense<[[[-0.850, -0.825, -0.474, -0.312, -1.252, 0.427], [1.075, 1.224, 1.124, 0.834, 0.920, 0.518], [-1.178, 0.948, 1.395, 1.505, 0.851, -0.443]], [[0.798, 1.007, -0.311, -0.373, 1.416, -0.331], [1.229, -0.289, -1.744, -0.541, 0.682, -1.279], [-0.348, 1.166, 0.488, 1.608, 0.465, 0.562]]]> : tensor<2x3x6xf64>
  %m = lm.mul %y, %w : (tensor<2x3x6xf64>, tensor<2x3x6xf64>) -> tensor<2x3x6xf64>
  %l = lm.sum_to %m : (tensor<2x3x6xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

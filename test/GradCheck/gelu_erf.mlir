// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.gelu_erf (the exact, erf form).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.gelu_erf %x : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %2 = lm.constant dense<[[[-1.067, 1.133, 1.414, -0.387, 0.502], [0.862, -1.548, 0.628, 1.207, -0.302], [1.338, 0.936, -1.425, 1.083, 1.268]], [[-1.679, 0.398, 0.964, -1.103, 0.882], [0.264, -1.202, 1.340, 1.653, -0.351], [0.606, 0.785, -1.479, 0.874, 0.975]]]> : tensor<2x3x5xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x5xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

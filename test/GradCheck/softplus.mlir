// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// RUN: lm-opt %s --lm-train-pipeline='fusion=none' -lm-fuse | FileCheck %s --check-prefix=FUSED
// CHECK: gradcheck: ok

// Tests the VJP of lm.softplus, dy * sigmoid(x), on both sides of 0 (std 3).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result. The fused plan computes softplus and
// its VJP in generated kernels (FUSED), the --fusion=none plan in the library
// kernels.
// FUSED-LABEL: func.func @loss_train_step(
// FUSED:       lm.fusion
// FUSED-NEXT:  ^bb0(
// FUSED-NEXT:    lm.softplus
// FUSED:       lm.fusion
// FUSED-NEXT:  ^bb0(
// FUSED-NEXT:    lm.sigmoid
// FUSED-NEXT:    lm.mul
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 3.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %y = lm.softplus %x : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[0.731, -1.402, 1.219, 0.566, -0.893], [1.517, 0.284, -1.106, 0.957, 1.342], [-0.618, 1.083, 0.412, -1.275, 0.809]], [[1.166, -0.347, 0.902, 1.611, -1.038], [0.455, 1.297, -0.771, 0.638, 1.454], [-1.189, 0.527, 1.376, -0.262, 0.994]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

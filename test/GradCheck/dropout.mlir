// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan --max-elems 30 | FileCheck %s
// RUN: lm-opt %s --lm-train-pipeline='fusion=none' | FileCheck %s --check-prefix=IR
// CHECK: gradcheck: ok
// CHECK-SAME: 30 elements

// Tests the VJP of lm.dropout, dx = dropout(dy) with the forward's key and
// site (the mask regenerated, not stored), with a fixed mask: lmrt gradcheck
// fills the dropout_key input once, so every loss it differences drops the
// same elements, and it differences train_step's loss (eval drops nothing).
// Two dropouts at p = 0.5 in a row (sites 0 and 1) make a mask that reuses
// the first site's mask in the second's place, or the wrong key row, give
// the wrong gradient; the loss weights every element differently.
// IR-LABEL: func.func @loss(
// IR-NOT:     lm.dropout
// IR:         return
// IR-LABEL: func.func @loss_train_step(
// IR:         lm.dropout %{{.*}}, %arg1 {p = 5.000000e-01 : f64}
// IR:         lm.dropout %{{.*}}, %arg1 {p = 5.000000e-01 : f64, site = 1 : i64}
// IR:         lm.dropout %{{.*}}, %arg1 {p = 5.000000e-01 : f64, site = 1 : i64}
// IR:         lm.dropout %{{.*}}, %arg1 {p = 5.000000e-01 : f64}
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %key: tensor<2x2xi32> {lm.input = "dropout_key"}) -> tensor<f64>
    attributes {lm.objective} {
  %d = lm.dropout %x, %key {p = 0.5 : f64, site = 0 : i64} : (tensor<2x3x5xf64>, tensor<2x2xi32>) -> tensor<2x3x5xf64>
  %e = lm.tanh %d : (tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %y = lm.dropout %e, %key {p = 0.5 : f64, site = 1 : i64} : (tensor<2x3x5xf64>, tensor<2x2xi32>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[0.731, -1.402, 1.219, 0.566, -0.893], [1.517, 0.284, -1.106, 0.957, 1.342], [-0.618, 1.083, 0.412, -1.275, 0.809]], [[1.166, -0.347, 0.902, 1.611, -1.038], [0.455, 1.297, -0.771, 0.638, 1.454], [-1.189, 0.527, 1.376, -0.262, 0.994]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.cross_entropy with ignored targets (ignore_index -100 in
// constant targets, and ignore_index 2 on random input targets).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%logits: tensor<2x3x5xf64> {lm.param = "logits", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %logits2: tensor<4x5xf64> {lm.param = "logits2", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %targets: tensor<4xi32> {lm.input = "targets", lm.vocab = 5 : i64}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.constant dense<[[1, -100, 4], [0, 2, -100]]> : tensor<2x3xi32>
  %2 = lm.cross_entropy %logits, %1 : (tensor<2x3x5xf64>, tensor<2x3xi32>) -> tensor<f64>
  %3 = lm.cross_entropy %logits2, %targets {ignore_index = 2 : i64} : (tensor<4x5xf64>, tensor<4xi32>) -> tensor<f64>
  %4 = lm.add %2, %3 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %4 : tensor<f64>
}

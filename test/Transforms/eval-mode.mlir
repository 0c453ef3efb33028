// RUN: lm-opt %s -lm-eval-mode | FileCheck %s
// RUN: lm-opt %s -lm-autodiff -lm-eval-mode | FileCheck %s --check-prefix=TRAIN

// Tests that -lm-eval-mode makes dropout the identity in every program but
// the train step: the objective (eval) and a model (forward) read x itself,
// and keep their dropout_key argument (one pipeline feeds train_step and
// eval); the train step -lm-autodiff builds keeps the forward's dropout and
// its VJP.
// CHECK-LABEL: func.func @model(
// CHECK-NOT:     lm.dropout
// CHECK:         lm.tanh %arg0
// CHECK-LABEL: func.func @loss(
// CHECK-SAME:    {lm.input = "dropout_key"}
// CHECK-NOT:     lm.dropout
// CHECK:         lm.sum_to %arg0
// TRAIN-LABEL: func.func @loss_train_step(
// TRAIN:         lm.dropout %arg0, %arg1 {p = 2.500000e-01 : f64, site = 4 : i64}
// TRAIN:         lm.dropout %{{.*}}, %arg1 {p = 2.500000e-01 : f64, site = 4 : i64}
func.func @model(%x: tensor<2x3xf32> {lm.input = "x"}, %key: tensor<2x2xi32> {lm.input = "dropout_key"}) -> tensor<2x3xf32>
    attributes {lm.model} {
  %d = lm.dropout %x, %key {p = 0.5 : f64} : (tensor<2x3xf32>, tensor<2x2xi32>) -> tensor<2x3xf32>
  %t = lm.tanh %d : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %t : tensor<2x3xf32>
}
func.func @loss(%x: tensor<2x3xf32> {lm.param = "x", lm.init = {kind = "zeros"}},
                %key: tensor<2x2xi32> {lm.input = "dropout_key"}) -> tensor<f32> attributes {lm.objective} {
  %d = lm.dropout %x, %key {p = 0.25 : f64, site = 4 : i64} : (tensor<2x3xf32>, tensor<2x2xi32>) -> tensor<2x3xf32>
  %l = lm.sum_to %d : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// RUN: lm-opt %s -split-input-file -lm-autodiff | FileCheck %s

// Tests that lm.stop_gradient passes its value forward and no gradient back:
// y reaches the loss only through it, so its gradient is zeros, while x's
// gradient is dy * stop_gradient(y).
// CHECK-LABEL: func.func @loss_train_step
// CHECK: %[[S:.*]] = lm.stop_gradient %arg1
// CHECK: %[[DX:.*]] = lm.mul %{{[0-9]+}}, %[[S]]
// CHECK: %[[DY:.*]] = lm.fill 0.000000e+00 : tensor<4xf32>
// CHECK: return %{{.*}}, %[[DX]], %[[DY]]
func.func @loss(%x: tensor<4xf32> {lm.param = "x", lm.init = {kind = "zeros"}},
                %y: tensor<4xf32> {lm.param = "y", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %s = lm.stop_gradient %y : (tensor<4xf32>) -> tensor<4xf32>
  %p = lm.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = lm.sum_to %p : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a comparison's mask carries no gradient: relu's VJP multiplies dy
// by the mask x > 0 and nothing flows into the comparison's operands.
// CHECK-LABEL: func.func @relu_train_step
// CHECK: %[[M:.*]] = lm.gt %arg0
// CHECK: lm.mul %{{.*}}, %[[M]]
// CHECK-NOT: lm.gt
// CHECK: return
func.func @relu(%x: tensor<4xf32> {lm.param = "x", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %r = lm.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %l = lm.sum_to %r : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

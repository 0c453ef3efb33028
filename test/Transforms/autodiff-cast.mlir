// RUN: lm-opt %s -lm-autodiff | FileCheck %s

// Tests lm.cast's VJP (straight-through: the derivative of the rounding is
// taken as 1, as PyTorch's autocast does): the gradient of a bf16 GEMM operand
// is cast back to the operand's f32, so the parameter gets an f32 gradient.
// (A finite-difference check cannot see a rounding's derivative: it is 0
// almost everywhere; the gradient this rule gives is held to fp32's in
// test/E2E/mixed-precision.test.)
// CHECK-LABEL: func.func @loss_train_step
// CHECK-DAG:   %[[WB:.*]] = lm.cast %arg1 : (tensor<4x3xf32>) -> tensor<4x3xbf16>
// CHECK-DAG:   %[[XB:.*]] = lm.cast %arg0 : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK:       lm.matmul %[[XB]], %[[WB]] : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xf32>
// CHECK:       %[[DWB:.*]] = lm.matmul %[[XB]], %{{.*}} {transpose_lhs = true} : (tensor<2x4xbf16>, tensor<2x3xbf16>) -> tensor<4x3xf32>
// CHECK:       lm.cast %[[DWB]] : (tensor<4x3xf32>) -> tensor<4x3xbf16>
// CHECK:       %[[DW:.*]] = lm.cast %{{.*}} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
// CHECK:       return %{{.*}}, %[[DW]] : tensor<f32>, tensor<4x3xf32>
func.func @loss(%x: tensor<2x4xf32>, %w: tensor<4x3xf32> {lm.param = "w", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %xb = lm.cast %x : (tensor<2x4xf32>) -> tensor<2x4xbf16>
  %wb = lm.cast %w : (tensor<4x3xf32>) -> tensor<4x3xbf16>
  %y = lm.matmul %xb, %wb : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xf32>
  %l = lm.sum_to %y : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// RUN: lm-opt %s '-lm-autodiff=loss-scale=1' | FileCheck %s
// RUN: lm-opt %s '-lm-autodiff=loss-scale=1' '-lm-mixed-precision=precision=fp16' | FileCheck %s --check-prefix=FP16
// RUN: lm-opt %s --lm-train-pipeline='precision=fp16 fusion=none' | FileCheck %s --check-prefix=FP16
// RUN: not lm-opt %s -lm-autodiff '-lm-mixed-precision=precision=fp16' 2>&1 | FileCheck %s --check-prefix=UNSCALED
// RUN: sed 's/f32/f64/g' %s | not lm-opt '-lm-autodiff=loss-scale=1' 2>&1 | FileCheck %s --check-prefix=F64

// Tests fp16's loss scaling in the train step (docs/mixed-precision.md,
// "fp16"): with -lm-autodiff=loss-scale=1 the train step takes one more
// argument, last, the f32 scalar {lm.input = "loss_scale"}, and the backward
// is seeded with it instead of the constant 1, so every gradient is the
// scale times the true one; the objective (the eval program) is unchanged.
// -lm-mixed-precision=precision=fp16 casts GEMM operands to f16 and refuses a
// train step without the scale (fp16 would lose small gradients).

// CHECK-LABEL: func.func @loss(
// CHECK-SAME:    -> tensor<f32> attributes {lm.objective}
// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4x8xf32> {lm.param = "x"}, %[[W:[a-z0-9]+]]: tensor<8x3xf32> {lm.param = "w"},
// CHECK-SAME:    %[[S:[a-z0-9]+]]: tensor<f32> {lm.input = "loss_scale"})
// CHECK-NOT:     lm.constant dense<1.000000e+00>
// CHECK:         %[[DY:.*]] = lm.add %{{.*}}, %[[S]] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
// CHECK:         lm.matmul %[[DY]], %[[W]] {transpose_rhs = true}

// FP16-LABEL: func.func @loss_train_step(
// FP16-SAME:    {lm.input = "loss_scale"}
// FP16:         lm.cast %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf16>
// FP16:         lm.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf32>

// F64: error: loss scaling (precision fp16) needs an f32 loss, this objective's is 'f64' (mixed precision applies to f32 models: compile f64 ones with precision fp32)
// UNSCALED: error: -lm-mixed-precision: precision fp16 needs a train step seeded by a loss scale (its 'loss_scale' input: -lm-autodiff=loss-scale=1); this one has none
func.func @loss(%x: tensor<4x8xf32> {lm.param = "x"}, %w: tensor<8x3xf32> {lm.param = "w"}) -> tensor<f32>
    attributes {lm.objective} {
  %0 = lm.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = lm.sum_to %0 : (tensor<4x3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

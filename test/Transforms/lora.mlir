// RUN: lm-opt %s -split-input-file -verify-diagnostics -lm-lora | FileCheck %s

// Tests -lm-lora: the target w gets A [3, 2] (uniform within 1/sqrt(3)) and
// B [2, 5] (zeros) right after it, every parameter but those named trainable
// is frozen (the target too), and x @ w becomes x @ w + (alpha / r) (x @ A) @ B.
// CHECK-LABEL: func.func @loss
// CHECK-SAME: %[[W:.*]]: tensor<3x5xf32> {lm.frozen, lm.init = {kind = "zeros"}, lm.param = "w"}
// CHECK-SAME: %[[A:.*]]: tensor<3x2xf32> {lm.init = {high = 0.57735026918962584 : f64, kind = "uniform", low = -0.57735026918962584 : f64}, lm.param = "w.lora_A"}
// CHECK-SAME: %[[B:.*]]: tensor<2x5xf32> {lm.init = {kind = "zeros"}, lm.param = "w.lora_B"}
// CHECK-SAME: %[[BIAS:.*]]: tensor<5xf32> {lm.frozen, lm.init = {kind = "zeros"}, lm.param = "b"}
// CHECK-SAME: %[[HEAD:.*]]: tensor<5x1xf32> {lm.init = {kind = "zeros"}, lm.param = "head"}
// CHECK: %[[Y:.*]] = lm.matmul %[[X:.*]], %[[W]]
// CHECK: %[[XA:.*]] = lm.matmul %[[X]], %[[A]] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// CHECK: %[[XAB:.*]] = lm.matmul %[[XA]], %[[B]] : (tensor<4x2xf32>, tensor<2x5xf32>) -> tensor<4x5xf32>
// CHECK: %[[S:.*]] = lm.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[D:.*]] = lm.mul %[[XAB]], %[[S]]
// CHECK: %[[SUM:.*]] = lm.add %[[Y]], %[[D]]
// CHECK: lm.add %[[SUM]], %[[BIAS]]
module attributes {lm.lora = {rank = 2 : i64, alpha = 8.0 : f64, targets = ["w"], trainable = ["head"]}} {
  func.func @loss(%w: tensor<3x5xf32> {lm.param = "w", lm.init = {kind = "zeros"}},
                  %b: tensor<5xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                  %h: tensor<5x1xf32> {lm.param = "head", lm.init = {kind = "zeros"}},
                  %x: tensor<4x3xf32> {lm.input = "x"}) -> tensor<f32>
      attributes {lm.objective} {
    %y = lm.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %z = lm.add %y, %b : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
    %o = lm.matmul %z, %h : (tensor<4x5xf32>, tensor<5x1xf32>) -> tensor<4x1xf32>
    %l = lm.sum_to %o : (tensor<4x1xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests that without lm.lora nothing changes.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: lora
// CHECK-NOT: lm.frozen
func.func @plain(%w: tensor<2x2xf32> {lm.param = "w", lm.init = {kind = "zeros"}}, %x: tensor<4x2xf32> {lm.input = "x"}) -> tensor<f32>
    attributes {lm.objective} {
  %y = lm.matmul %x, %w : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %l = lm.sum_to %y : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A target used by an embedding is refused at the use.
module attributes {lm.lora = {rank = 2 : i64, alpha = 8.0 : f64, targets = ["wte"]}} {
  // expected-note @below {{the parameter is declared here}}
  func.func @emb(%wte: tensor<8x4xf32> {lm.param = "wte", lm.init = {kind = "zeros"}}, %t: tensor<2x3xi32> {lm.input = "t"}) -> tensor<f32>
      attributes {lm.objective} {
    // expected-error @below {{LoRA target 'wte' is used here by lm.embedding; LoRA adapts a weight W [in, out] used only as x @ W}}
    %e = lm.embedding %wte, %t : (tensor<8x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
    %l = lm.sum_to %e : (tensor<2x3x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A transposed use (a tied output projection) is refused.
module attributes {lm.lora = {rank = 2 : i64, alpha = 8.0 : f64, targets = ["wte"]}} {
  // expected-note @below {{the parameter is declared here}}
  func.func @tied(%wte: tensor<8x4xf32> {lm.param = "wte", lm.init = {kind = "zeros"}}, %h: tensor<2x4xf32> {lm.input = "h"}) -> tensor<f32>
      attributes {lm.objective} {
    // expected-error @below {{LoRA target 'wte' is used here by lm.matmul transposed (x @ transpose(W)); LoRA adapts a weight W [in, out] used only as x @ W}}
    %y = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %l = lm.sum_to %y : (tensor<2x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A target that is not a rank-2 tensor (a bias) is refused.
module attributes {lm.lora = {rank = 2 : i64, alpha = 8.0 : f64, targets = ["b"]}} {
  // expected-error @below {{LoRA target 'b' is 'tensor<4xf32>'; LoRA adapts a matmul weight, a rank-2 float tensor [in, out]}}
  func.func @bias(%b: tensor<4xf32> {lm.param = "b", lm.init = {kind = "zeros"}}, %x: tensor<2x4xf32> {lm.input = "x"}) -> tensor<f32>
      attributes {lm.objective} {
    %y = lm.add %x, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %l = lm.sum_to %y : (tensor<2x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A target no function has, and a rank below 1.
// expected-error @below {{lm.lora: target 'nope' is not a parameter of any function}}
module attributes {lm.lora = {rank = 2 : i64, alpha = 8.0 : f64, targets = ["nope"]}} {
  func.func @none(%x: tensor<2xf32> {lm.input = "x"}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.sum_to %x : (tensor<2xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// expected-error @below {{lm.lora: rank must be at least 1, got 0}}
module attributes {lm.lora = {rank = 0 : i64, alpha = 8.0 : f64, targets = ["w"]}} {
}

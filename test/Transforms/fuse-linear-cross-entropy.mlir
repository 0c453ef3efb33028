// RUN: lm-opt %s --lm-train-pipeline='fusion=none' -lm-fuse-linear-cross-entropy | FileCheck %s
// RUN: lm-opt %s --lm-train-pipeline='fusion=none' -lm-fuse-linear-cross-entropy='chunk-rows=3' | FileCheck %s --check-prefix=CHUNK
// RUN: lm-opt %s --lm-train-pipeline='fusion=none' | FileCheck %s --check-prefix=NONE
// RUN: lm-opt %s --lm-train-pipeline='fusion=none' -lm-fuse-linear-cross-entropy | lm-opt | FileCheck %s --check-prefix=ROUNDTRIP

// Tests that -lm-fuse-linear-cross-entropy turns the output projection and the
// loss into one op chunked over rows: in the train step, the logits matmul,
// cross_entropy_with_grad and the two matmuls of the logits' gradient (dh, and
// dw over flattened rows) become one linear_cross_entropy_with_grad whose dh and
// dw replace them (a tied [V, D] table, so transpose_rhs, and its gradient still
// gets the embedding's rows added); in the objective, cross_entropy of a matmul
// becomes linear_cross_entropy. Without the pass (fusion=none) the reference
// ops stay. A logits tensor read by anything but the loss is left alone.

// CHECK-LABEL: func.func @tied(
// CHECK-NOT:   lm.matmul
// CHECK:       %[[L:.*]] = lm.linear_cross_entropy %{{.*}}, %arg1, %{{.*}} {chunk_rows = 8 : i64, transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<f32>
// CHECK-NEXT:  return %[[L]]

// CHECK-LABEL: func.func @tied_train_step(
// CHECK:       %[[SEED:.*]] = lm.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NOT:   lm.matmul
// CHECK-NOT:   lm.cross_entropy
// CHECK:       %[[DH:.*]], %[[DW:.*]], %[[LOSS:.*]] = lm.linear_cross_entropy_with_grad %{{.*}}, %arg1, %{{.*}}, %[[SEED]] {chunk_rows = 8 : i64, transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi32>, tensor<f32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<f32>)
// CHECK-NOT:   lm.matmul
// CHECK-NOT:   lm.reshape
// CHECK:       lm.layer_norm_grad %{{.*}}, %{{.*}}, %[[DH]]
// CHECK:       %[[DWTE:.*]] = lm.embedding_grad_add %[[DW]], %{{.*}}, %{{.*}} :
// CHECK-NEXT:  return %[[LOSS]], %[[DWTE]],

// CHUNK: lm.linear_cross_entropy %{{.*}} {chunk_rows = 3 : i64, transpose_rhs = true}
// CHUNK: lm.linear_cross_entropy_with_grad %{{.*}} {chunk_rows = 3 : i64, transpose_rhs = true}

// NONE-LABEL: func.func @tied_train_step(
// NONE:       lm.matmul %{{.*}}, %arg1 {transpose_rhs = true}
// NONE:       lm.cross_entropy_with_grad
// NONE-NOT:   linear_cross_entropy

// ROUNDTRIP: lm.linear_cross_entropy_with_grad
func.func @tied(%ids: tensor<2x5xi32> {lm.input = "tokens", lm.vocab = 16 : i64},
                %wte: tensor<16x8xf32> {lm.param = "wte", lm.init = {kind = "normal", mean = 0.0 : f64, std = 0.02 : f64}},
                %g: tensor<8xf32> {lm.param = "ln.gamma", lm.init = {kind = "ones"}},
                %b: tensor<8xf32> {lm.param = "ln.beta", lm.init = {kind = "zeros"}})
    -> tensor<f32> attributes {lm.objective} {
  %in = lm.slice %ids {start = array<i64: 0, 0>, limit = array<i64: 2, 4>, stride = array<i64: 1, 1>} : (tensor<2x5xi32>) -> tensor<2x4xi32>
  %t = lm.slice %ids {start = array<i64: 0, 1>, limit = array<i64: 2, 5>, stride = array<i64: 1, 1>} : (tensor<2x5xi32>) -> tensor<2x4xi32>
  %x = lm.embedding %wte, %in : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %h = lm.layer_norm %x, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %logits = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = lm.cross_entropy %logits, %t : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// An untied [D, V] head on rank-2 hidden states: no flattening, dw = h^T dlogits.
// (Both gradients are needed: a train step that reads only one of them, a
// frozen head or hidden states that are an input, keeps the reference ops.)
// CHECK-LABEL: func.func @untied_train_step(
// CHECK-NOT:   lm.matmul
// CHECK:       %[[DH2:.*]], %[[DW2:.*]], %[[LOSS2:.*]] = lm.linear_cross_entropy_with_grad %arg1, %arg2, %arg0, %{{.*}} {chunk_rows = 6 : i64} : (tensor<6x8xf32>, tensor<8x16xf32>, tensor<6xi32>, tensor<f32>) -> (tensor<6x8xf32>, tensor<8x16xf32>, tensor<f32>)
// CHECK-NOT:   lm.matmul
// CHECK:       return %[[LOSS2]], %[[DH2]], %[[DW2]]
func.func @untied(%t: tensor<6xi32> {lm.input = "targets", lm.vocab = 16 : i64},
                  %h: tensor<6x8xf32> {lm.param = "h", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                  %w: tensor<8x16xf32> {lm.param = "w", lm.init = {kind = "normal", mean = 0.0 : f64, std = 0.02 : f64}})
    -> tensor<f32> attributes {lm.objective} {
  %logits = lm.matmul %h, %w : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %loss = lm.cross_entropy %logits, %t : (tensor<6x16xf32>, tensor<6xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// The logits are also returned: they must exist whole, nothing is fused.
// CHECK-LABEL: func.func @logits_used(
// CHECK:       lm.matmul
// CHECK:       lm.cross_entropy %
// CHECK-NOT:   linear_cross_entropy
func.func @logits_used(%h: tensor<6x8xf32>, %w: tensor<8x16xf32>, %t: tensor<6xi32>) -> (tensor<f32>, tensor<6x16xf32>) {
  %logits = lm.matmul %h, %w : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %loss = lm.cross_entropy %logits, %t : (tensor<6x16xf32>, tensor<6xi32>) -> tensor<f32>
  return %loss, %logits : tensor<f32>, tensor<6x16xf32>
}

// RUN: lm-opt %s --lm-train-pipeline='fusion=none' | FileCheck %s
// RUN: lm-opt %s --lm-train-pipeline='fusion=none' | FileCheck %s --check-prefix=CONST

// Tests that the train pipeline (autodiff, canonicalize, cse) differentiates
// a small pre-norm transformer with tied embeddings into a clean train step:
// one backward op per forward op, the seed's broadcasts folded away (the
// seed is the only constant left), the tied table's two gradients summed (the
// embedding's rows scattered into the projection's gradient), and
// the three q/k/v slices of one projection joined into one adjoint (the
// concat of dq, dk, dv: no zero-filled slice_grad is left).
// The CONST run checks the whole train step: after its first (and only)
// constant, no other lm.constant comes before its return.
// CONST-LABEL: func.func @lm_loss_train_step(
// CONST-COUNT-1: lm.constant dense<1.000000e+00> : tensor<f32>
// CONST-NOT: lm.constant
// CONST: return
// CHECK-LABEL: func.func @lm_loss_train_step(
// CHECK-SAME: -> (tensor<f32>, tensor<16x8xf32> {lm.grad_of = "wte"}, tensor<8xf32> {lm.grad_of = "ln.gamma"}, tensor<8xf32> {lm.grad_of = "ln.beta"}, tensor<8x24xf32> {lm.grad_of = "wqkv"}, tensor<8x8xf32> {lm.grad_of = "w1"})
// CHECK-SAME: attributes {lm.train_step}
// CHECK-NEXT: %[[SEED:.*]] = lm.constant dense<1.000000e+00> : tensor<f32>
// CHECK: lm.cross_entropy_with_grad %{{.*}}, %{{.*}}, %[[SEED]]
// CHECK: lm.gelu_grad
// CHECK: lm.attention_grad
// CHECK-NOT: lm.slice_grad
// CHECK: %[[KV:.*]] = lm.concat %dk, %dv {axis = 2 : i64}
// CHECK-NEXT: lm.concat %dq, %[[KV]] {axis = 2 : i64}
// CHECK-NOT: lm.slice_grad
// CHECK: lm.layer_norm_grad
// The tied table's two gradient terms: the rows scattered into the projection's.
// CHECK-NOT: lm.embedding_grad %
// CHECK: %[[DWTE:.*]] = lm.embedding_grad_add %{{[0-9]+}}, %arg0, %{{.*}} : (tensor<16x8xf32>,
// CHECK-NEXT: return %{{.*}}, %[[DWTE]],
func.func @lm_loss(%ids: tensor<2x4xi32> {lm.input = "tokens", lm.vocab = 16 : i64},
                   %wte: tensor<16x8xf32> {lm.param = "wte", lm.init = {kind = "normal", mean = 0.0 : f64, std = 0.02 : f64}},
                   %g: tensor<8xf32> {lm.param = "ln.gamma", lm.init = {kind = "ones"}},
                   %b: tensor<8xf32> {lm.param = "ln.beta", lm.init = {kind = "zeros"}},
                   %wqkv: tensor<8x24xf32> {lm.param = "wqkv", lm.init = {kind = "normal", mean = 0.0 : f64, std = 0.02 : f64}},
                   %w1: tensor<8x8xf32> {lm.param = "w1", lm.init = {kind = "normal", mean = 0.0 : f64, std = 0.02 : f64}})
    -> tensor<f32> attributes {lm.objective} {
  %x = lm.embedding %wte, %ids : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %h = lm.layer_norm %x, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %qkv = lm.matmul %h, %wqkv : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %q = lm.slice %qkv {start = array<i64: 0, 0, 0>, limit = array<i64: 2, 4, 8>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %k = lm.slice %qkv {start = array<i64: 0, 0, 8>, limit = array<i64: 2, 4, 16>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %v = lm.slice %qkv {start = array<i64: 0, 0, 16>, limit = array<i64: 2, 4, 24>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %a = lm.attention %q, %k, %v {num_heads = 2 : i64, causal = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %m = lm.matmul %a, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %y = lm.gelu %m : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = lm.add %x, %y : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = lm.matmul %r, %wte {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = lm.cross_entropy %logits, %ids : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// RUN: lm-opt %s | lm-opt | FileCheck %s
// RUN: lm-opt %s --mlir-print-op-generic | lm-opt | FileCheck %s

// Tests that every lm op (forward and backward) round-trips through the
// custom assembly format.

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<f32>, tensor<2x2xf64>, tensor<3xi32>) {
  // CHECK: lm.constant dense<1.000000e+00> : tensor<f32>
  %0 = lm.constant dense<1.0> : tensor<f32>
  // CHECK: lm.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf64>
  %1 = lm.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf64>
  // CHECK: lm.constant dense<[0, 1, 2]> : tensor<3xi32>
  %2 = lm.constant dense<[0, 1, 2]> : tensor<3xi32>
  return %0, %1, %2 : tensor<f32>, tensor<2x2xf64>, tensor<3xi32>
}

// CHECK-LABEL: func.func @fill
func.func @fill() -> (tensor<64x64xf32>, tensor<3xf64>) {
  // CHECK: lm.fill 0.000000e+00 : tensor<64x64xf32>
  %0 = lm.fill 0.0 : tensor<64x64xf32>
  // CHECK: lm.fill -2.500000e+00 : tensor<3xf64>
  %1 = lm.fill -2.5 : tensor<3xf64>
  return %0, %1 : tensor<64x64xf32>, tensor<3xf64>
}

// CHECK-LABEL: func.func @embedding
func.func @embedding(%table: tensor<256x64xf32>, %ids: tensor<4x16xi32>) -> tensor<4x16x64xf32> {
  // CHECK: lm.embedding %{{.*}}, %{{.*}} : (tensor<256x64xf32>, tensor<4x16xi32>) -> tensor<4x16x64xf32>
  %0 = lm.embedding %table, %ids : (tensor<256x64xf32>, tensor<4x16xi32>) -> tensor<4x16x64xf32>
  return %0 : tensor<4x16x64xf32>
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<4x16x64xf32>, %w: tensor<64x32xf32>, %wt: tensor<32x64xf32>,
                  %b: tensor<4x64x16xf32>) -> (tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<4x16x16xf32>) {
  // CHECK: lm.matmul %{{.*}}, %{{.*}} : (tensor<4x16x64xf32>, tensor<64x32xf32>) -> tensor<4x16x32xf32>
  %0 = lm.matmul %x, %w : (tensor<4x16x64xf32>, tensor<64x32xf32>) -> tensor<4x16x32xf32>
  // CHECK: lm.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<4x16x64xf32>, tensor<32x64xf32>) -> tensor<4x16x32xf32>
  %1 = lm.matmul %x, %wt {transpose_rhs = true} : (tensor<4x16x64xf32>, tensor<32x64xf32>) -> tensor<4x16x32xf32>
  // CHECK: lm.matmul %{{.*}}, %{{.*}} {transpose_lhs = true, transpose_rhs = true} : (tensor<4x64x16xf32>, tensor<4x16x64xf32>) -> tensor<4x16x16xf32>
  %2 = lm.matmul %b, %x {transpose_lhs = true, transpose_rhs = true} : (tensor<4x64x16xf32>, tensor<4x16x64xf32>) -> tensor<4x16x16xf32>
  return %0, %1, %2 : tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<4x16x16xf32>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<4x8xf64>, %b: tensor<8xf64>, %c: tensor<4x1xf64>) -> tensor<4x8xf64> {
  // CHECK: lm.add %{{.*}}, %{{.*}} : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %0 = lm.add %x, %b : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  // CHECK: lm.sub %{{.*}}, %{{.*}} : (tensor<4x1xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %1 = lm.sub %c, %b : (tensor<4x1xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  // CHECK: lm.mul
  %2 = lm.mul %0, %1 : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  // CHECK: lm.div
  %3 = lm.div %2, %c : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  // CHECK: lm.neg %{{.*}} : (tensor<4x8xf64>) -> tensor<4x8xf64>
  %4 = lm.neg %3 : (tensor<4x8xf64>) -> tensor<4x8xf64>
  // CHECK: lm.gelu %{{.*}} : (tensor<4x8xf64>) -> tensor<4x8xf64>
  %5 = lm.gelu %4 : (tensor<4x8xf64>) -> tensor<4x8xf64>
  // CHECK: lm.softmax %{{.*}} : (tensor<4x8xf64>) -> tensor<4x8xf64>
  %6 = lm.softmax %5 : (tensor<4x8xf64>) -> tensor<4x8xf64>
  return %6 : tensor<4x8xf64>
}

// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: lm.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = lm.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: lm.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64}
  %1 = lm.layer_norm %x, %g, %b {epsilon = 1.0e-3 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // CHECK: lm.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %0 = lm.attention %q, %q, %q {causal = true, num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// CHECK-LABEL: func.func @packed_attention
func.func @packed_attention(%qkv: tensor<2x8x64xf32>, %dy: tensor<2x8x32xf32>) -> tensor<2x8x64xf32> {
  // CHECK: lm.packed_attention %{{.*}} {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x64xf32>) -> tensor<2x8x32xf32>
  %0 = lm.packed_attention %qkv {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x64xf32>) -> tensor<2x8x32xf32>
  // CHECK: lm.packed_attention_stats %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x64xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
  %y, %lse = lm.packed_attention_stats %qkv {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x64xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
  // CHECK: lm.packed_attention_grad_stats %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x64xf32>, tensor<2x8x32xf32>, tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> tensor<2x8x64xf32>
  %1 = lm.packed_attention_grad_stats %qkv, %y, %lse, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x64xf32>, tensor<2x8x32xf32>, tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> tensor<2x8x64xf32>
  return %1 : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @biased_attention
func.func @biased_attention(%q: tensor<2x8x32xf32>, %b: tensor<1x4x8x8xf32>, %s: tensor<2x8xi32>, %m: tensor<f32>, %key: tensor<2x2xi32>) -> tensor<2x8x32xf32> {
  // CHECK: lm.biased_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, dropout = 1.000000e-01 : f64, num_heads = 4 : i64, scale = 1.000000e+00 : f64, site = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<1x4x8x8xf32>, tensor<2x8xi32>, tensor<2x2xi32>) -> tensor<2x8x32xf32>
  %0 = lm.biased_attention %q, %q, %q, %m, %b, %s, %key {causal = true, num_heads = 4 : i64, scale = 1.0 : f64, dropout = 0.1 : f64, site = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<1x4x8x8xf32>, tensor<2x8xi32>, tensor<2x2xi32>) -> tensor<2x8x32xf32>
  // CHECK: lm.biased_attention_grad {{.*}} -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<1x4x8x8xf32>)
  %1:4 = lm.biased_attention_grad %q, %q, %q, %m, %b, %s, %key, %0 {causal = true, num_heads = 4 : i64, scale = 1.0 : f64, dropout = 0.1 : f64, site = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<1x4x8x8xf32>, tensor<2x8xi32>, tensor<2x2xi32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<1x4x8x8xf32>)
  return %0 : tensor<2x8x32xf32>
}

// CHECK-LABEL: func.func @masked_cross_attention
func.func @masked_cross_attention(%q: tensor<2x8x32xf32>, %kv: tensor<2x5x16xf32>, %m: tensor<2x5xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  // CHECK: lm.masked_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<2x5xf32>) -> tensor<2x8x32xf32>
  %0 = lm.masked_attention %q, %kv, %kv, %m {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<2x5xf32>) -> tensor<2x8x32xf32>
  // CHECK: lm.masked_attention_grad {{.*}} -> (tensor<2x8x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>)
  %1:3 = lm.masked_attention_grad %q, %kv, %kv, %m, %0 {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<2x5xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>)
  // CHECK: lm.attention %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>) -> tensor<2x8x32xf32>
  %2 = lm.attention %q, %kv, %kv {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>) -> tensor<2x8x32xf32>
  return %0, %2 : tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// CHECK-LABEL: func.func @shape_ops
func.func @shape_ops(%x: tensor<4x16x8xf32>, %t: tensor<4x17xi32>) -> (tensor<64x8xf32>, tensor<8x4x16xf32>, tensor<4x4x4xf32>, tensor<4x16xi32>) {
  // CHECK: lm.reshape %{{.*}} : (tensor<4x16x8xf32>) -> tensor<64x8xf32>
  %0 = lm.reshape %x : (tensor<4x16x8xf32>) -> tensor<64x8xf32>
  // CHECK: lm.transpose %{{.*}} {permutation = array<i64: 2, 0, 1>} : (tensor<4x16x8xf32>) -> tensor<8x4x16xf32>
  %1 = lm.transpose %x {permutation = array<i64: 2, 0, 1>} : (tensor<4x16x8xf32>) -> tensor<8x4x16xf32>
  // CHECK: lm.slice %{{.*}} {limit = array<i64: 4, 16, 8>, start = array<i64: 0, 1, 4>, stride = array<i64: 1, 4, 1>} : (tensor<4x16x8xf32>) -> tensor<4x4x4xf32>
  %2 = lm.slice %x {start = array<i64: 0, 1, 4>, limit = array<i64: 4, 16, 8>, stride = array<i64: 1, 4, 1>} : (tensor<4x16x8xf32>) -> tensor<4x4x4xf32>
  // CHECK: lm.slice %{{.*}} {limit = array<i64: 4, 17>, start = array<i64: 0, 1>, stride = array<i64: 1, 1>} : (tensor<4x17xi32>) -> tensor<4x16xi32>
  %3 = lm.slice %t {start = array<i64: 0, 1>, limit = array<i64: 4, 17>, stride = array<i64: 1, 1>} : (tensor<4x17xi32>) -> tensor<4x16xi32>
  return %0, %1, %2, %3 : tensor<64x8xf32>, tensor<8x4x16xf32>, tensor<4x4x4xf32>, tensor<4x16xi32>
}

// CHECK-LABEL: func.func @losses
func.func @losses(%logits: tensor<4x16x256xf32>, %targets: tensor<4x16xi32>, %x: tensor<4x16xf32>) -> (tensor<f32>, tensor<f32>, tensor<16xf32>) {
  // CHECK: lm.cross_entropy %{{.*}}, %{{.*}} : (tensor<4x16x256xf32>, tensor<4x16xi32>) -> tensor<f32>
  %0 = lm.cross_entropy %logits, %targets : (tensor<4x16x256xf32>, tensor<4x16xi32>) -> tensor<f32>
  // CHECK: lm.cross_entropy %{{.*}}, %{{.*}} {ignore_index = 0 : i64}
  %1 = lm.cross_entropy %logits, %targets {ignore_index = 0 : i64} : (tensor<4x16x256xf32>, tensor<4x16xi32>) -> tensor<f32>
  // CHECK: lm.sum_to %{{.*}} : (tensor<4x16xf32>) -> tensor<16xf32>
  %2 = lm.sum_to %x : (tensor<4x16xf32>) -> tensor<16xf32>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @metrics
func.func @metrics(%logits: tensor<4x16x256xf32>, %targets: tensor<4x16xi32>) -> (tensor<f32>, tensor<f32>) {
  // CHECK: lm.accuracy %{{.*}}, %{{.*}} : (tensor<4x16x256xf32>, tensor<4x16xi32>) -> tensor<f32>
  %0 = lm.accuracy %logits, %targets : (tensor<4x16x256xf32>, tensor<4x16xi32>) -> tensor<f32>
  // CHECK: lm.accuracy %{{.*}}, %{{.*}} {ignore_index = 0 : i64}
  %1 = lm.accuracy %logits, %targets {ignore_index = 0 : i64} : (tensor<4x16x256xf32>, tensor<4x16xi32>) -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @backward_ops
func.func @backward_ops(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>, %ids: tensor<2x8xi32>, %dl: tensor<f32>,
                        %s: tensor<2x4x32xf32>) {
  // CHECK: lm.gelu_grad %{{.*}}, %{{.*}} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %0 = lm.gelu_grad %x, %x : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: lm.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  %1:3 = lm.layer_norm_grad %x, %g, %x : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>)
  // CHECK: lm.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, num_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %2:3 = lm.attention_grad %x, %x, %x, %x {causal = true, num_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  // CHECK: lm.softmax_grad %{{.*}}, %{{.*}} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %3 = lm.softmax_grad %x, %x : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: lm.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = -1 : i64} : (tensor<2x8x32xf32>, tensor<2x8xi32>, tensor<f32>) -> tensor<2x8x32xf32>
  %4 = lm.cross_entropy_grad %x, %ids, %dl {ignore_index = -1 : i64} : (tensor<2x8x32xf32>, tensor<2x8xi32>, tensor<f32>) -> tensor<2x8x32xf32>
  // CHECK: lm.cross_entropy_with_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x32xf32>, tensor<2x8xi32>, tensor<f32>) -> (tensor<2x8x32xf32>, tensor<f32>)
  %cg:2 = lm.cross_entropy_with_grad %x, %ids, %dl : (tensor<2x8x32xf32>, tensor<2x8xi32>, tensor<f32>) -> (tensor<2x8x32xf32>, tensor<f32>)
  // CHECK: lm.embedding_grad %{{.*}}, %{{.*}} : (tensor<2x8xi32>, tensor<2x8x32xf32>) -> tensor<100x32xf32>
  %5 = lm.embedding_grad %ids, %x : (tensor<2x8xi32>, tensor<2x8x32xf32>) -> tensor<100x32xf32>
  // CHECK: lm.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} {chunk_rows = 4 : i64, transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<100x32xf32>, tensor<2x8xi32>) -> tensor<f32>
  %lce = lm.linear_cross_entropy %x, %5, %ids {chunk_rows = 4 : i64, transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<100x32xf32>, tensor<2x8xi32>) -> tensor<f32>
  // CHECK: lm.linear_cross_entropy_with_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<100x32xf32>, tensor<2x8xi32>, tensor<f32>) -> (tensor<2x8x32xf32>, tensor<100x32xf32>, tensor<f32>)
  %lceg:3 = lm.linear_cross_entropy_with_grad %x, %5, %ids, %dl {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<100x32xf32>, tensor<2x8xi32>, tensor<f32>) -> (tensor<2x8x32xf32>, tensor<100x32xf32>, tensor<f32>)
  // CHECK: lm.embedding_grad_add %{{.*}}, %{{.*}}, %{{.*}} : (tensor<100x32xf32>, tensor<2x8xi32>, tensor<2x8x32xf32>) -> tensor<100x32xf32>
  %ega = lm.embedding_grad_add %5, %ids, %x : (tensor<100x32xf32>, tensor<2x8xi32>, tensor<2x8x32xf32>) -> tensor<100x32xf32>
  // CHECK: lm.slice_grad %{{.*}} {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 1, 0>, stride = array<i64: 1, 2, 1>} : (tensor<2x4x32xf32>) -> tensor<2x8x32xf32>
  %6 = lm.slice_grad %s {start = array<i64: 0, 1, 0>, limit = array<i64: 2, 8, 32>, stride = array<i64: 1, 2, 1>} : (tensor<2x4x32xf32>) -> tensor<2x8x32xf32>
  return
}

// CHECK-LABEL: func.func @fusion
// CHECK: %{{.*}}:2 = lm.fusion %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> (tensor<8x256xf32>, tensor<8x256xf32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8x64xf32>, %{{.*}}: tensor<64x256xf32>, %{{.*}}: tensor<256xf32>):
// CHECK: lm.yield %{{.*}}, %{{.*}} : tensor<8x256xf32>, tensor<8x256xf32>
func.func @fusion(%x: tensor<8x64xf32>, %w: tensor<64x256xf32>, %b: tensor<256xf32>) -> (tensor<8x256xf32>, tensor<8x256xf32>) {
  %h, %a = lm.fusion %x, %w, %b : (tensor<8x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> (tensor<8x256xf32>, tensor<8x256xf32>) {
  ^bb0(%x0: tensor<8x64xf32>, %w0: tensor<64x256xf32>, %b0: tensor<256xf32>):
    %p = lm.matmul %x0, %w0 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
    %y = lm.add %p, %b0 : (tensor<8x256xf32>, tensor<256xf32>) -> tensor<8x256xf32>
    %g = lm.gelu %y : (tensor<8x256xf32>) -> tensor<8x256xf32>
    lm.yield %y, %g : tensor<8x256xf32>, tensor<8x256xf32>
  }
  return %h, %a : tensor<8x256xf32>, tensor<8x256xf32>
}

// CHECK-LABEL: func.func @zoo_math
func.func @zoo_math(%x: tensor<2x8xf32>, %b: tensor<8xf32>, %c: tensor<f32>) -> tensor<2x8xf32> {
  // CHECK: lm.tanh %{{.*}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %0 = lm.tanh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.sigmoid
  %1 = lm.sigmoid %0 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.log_sigmoid
  %2 = lm.log_sigmoid %1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.softplus %{{.*}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sp = lm.softplus %2 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.relu
  %3 = lm.relu %2 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.silu
  %4 = lm.silu %3 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.exp
  %5 = lm.exp %4 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.log
  %6 = lm.log %5 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.sqrt
  %7 = lm.sqrt %6 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.rsqrt
  %8 = lm.rsqrt %7 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.sin
  %9 = lm.sin %8 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.cos
  %10 = lm.cos %9 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.stop_gradient
  %11 = lm.stop_gradient %10 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.gt %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %12 = lm.gt %11, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  // CHECK: lm.ne
  %13 = lm.ne %12, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK: lm.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %14 = lm.where %13, %x, %c : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return %14 : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @zoo_shapes
func.func @zoo_shapes(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %kv: tensor<2x4x4xf32>) -> (tensor<2x4x16xf32>, tensor<2x1x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  // CHECK: lm.concat %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
  %0 = lm.concat %x, %x {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
  // CHECK: lm.reduce_max %{{.*}} {axes = array<i64: 1>} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  %1 = lm.reduce_max %x {axes = array<i64: 1>} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  // CHECK: lm.rms_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64}
  %2 = lm.rms_norm %x, %g {epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: lm.rms_norm_grad
  %3, %4 = lm.rms_norm_grad %x, %g, %2 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  // CHECK: lm.attention %{{.*}} {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
  %5 = lm.attention %x, %kv, %kv {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
  // CHECK: lm.attention_grad {{.*}} -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>)
  %6, %7, %8 = lm.attention_grad %x, %kv, %kv, %5 {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>)
  return %0, %1, %2, %6 : tensor<2x4x16xf32>, tensor<2x1x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// Tests that take_along_axis (with an index broadcasting over the leading
// dimensions) and its adjoint round-trip.
// CHECK-LABEL: func.func @take_along_axis
func.func @take_along_axis(%x: tensor<2x4x16x32xf32>, %i: tensor<1x1x16x16xi32>, %dy: tensor<2x4x16x16xf32>) {
  // CHECK: lm.take_along_axis %{{.*}}, %{{.*}} {axis = 3 : i64} : (tensor<2x4x16x32xf32>, tensor<1x1x16x16xi32>) -> tensor<2x4x16x16xf32>
  %0 = lm.take_along_axis %x, %i {axis = 3 : i64} : (tensor<2x4x16x32xf32>, tensor<1x1x16x16xi32>) -> tensor<2x4x16x16xf32>
  // CHECK: lm.take_along_axis_grad %{{.*}}, %{{.*}} {axis = 3 : i64} : (tensor<1x1x16x16xi32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x32xf32>
  %1 = lm.take_along_axis_grad %i, %dy {axis = 3 : i64} : (tensor<1x1x16x16xi32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x32xf32>
  return
}

// CHECK-LABEL: func.func @electra_ops
func.func @electra_ops(%x: tensor<2x4x8xf32>, %bits: tensor<2x4xi32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<2x4xf32>) {
  // CHECK: lm.gelu_erf %{{.*}} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %0 = lm.gelu_erf %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: lm.gelu_erf_grad %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %1 = lm.gelu_erf_grad %x, %0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: lm.sample %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  %2 = lm.sample %x, %bits : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  // CHECK: lm.to_float %{{.*}} : (tensor<2x4xi32>) -> tensor<2x4xf32>
  %3 = lm.to_float %2 : (tensor<2x4xi32>) -> tensor<2x4xf32>
  return %0, %1, %2, %3 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xi32>, tensor<2x4xf32>
}

// CHECK-LABEL: func.func @to_int
func.func @to_int(%x: tensor<2x4xf64>) -> tensor<2x4xi32> {
  // CHECK: lm.to_int %{{.*}} : (tensor<2x4xf64>) -> tensor<2x4xi32>
  %0 = lm.to_int %x : (tensor<2x4xf64>) -> tensor<2x4xi32>
  return %0 : tensor<2x4xi32>
}

// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<2x4x8xf32>, %key: tensor<2x2xi32>) -> tensor<2x4x8xf32> {
  // CHECK: lm.dropout %{{.*}}, %{{.*}} {p = 1.000000e-01 : f64, site = 3 : i64} : (tensor<2x4x8xf32>, tensor<2x2xi32>) -> tensor<2x4x8xf32>
  %0 = lm.dropout %x, %key {p = 0.1 : f64, site = 3 : i64} : (tensor<2x4x8xf32>, tensor<2x2xi32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @where_int
func.func @where_int(%m: tensor<2x4xf32>, %a: tensor<2x4xi32>, %b: tensor<4xi32>, %m64: tensor<f64>) -> (tensor<2x4xi32>, tensor<2x4xi32>) {
  // CHECK: lm.where_int %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<4xi32>) -> tensor<2x4xi32>
  %0 = lm.where_int %m, %a, %b : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<4xi32>) -> tensor<2x4xi32>
  // CHECK: lm.where_int %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f64>, tensor<4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  %1 = lm.where_int %m64, %b, %a : (tensor<f64>, tensor<4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  return %0, %1 : tensor<2x4xi32>, tensor<2x4xi32>
}

// CHECK-LABEL: func.func @decode_ops
func.func @decode_ops(%wpe: tensor<64x32xf32>, %off: tensor<i32>, %q: tensor<1x1x32xf32>, %kc: tensor<1x64x16xf32>) -> (tensor<1x32xf32>, tensor<1x64x16xf32>, tensor<1x1x32xf32>) {
  // CHECK: lm.dynamic_slice %{{.*}}, %{{.*}} {axis = 0 : i64, size = 1 : i64, start = 0 : i64} : (tensor<64x32xf32>, tensor<i32>) -> tensor<1x32xf32>
  %0 = lm.dynamic_slice %wpe, %off {axis = 0 : i64, size = 1 : i64, start = 0 : i64} : (tensor<64x32xf32>, tensor<i32>) -> tensor<1x32xf32>
  %k = lm.slice %q {limit = array<i64: 1, 1, 16>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<1x1x32xf32>) -> tensor<1x1x16xf32>
  // CHECK: lm.cache_write %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x64x16xf32>, tensor<1x1x16xf32>, tensor<i32>) -> tensor<1x64x16xf32>
  %1 = lm.cache_write %kc, %k, %off : (tensor<1x64x16xf32>, tensor<1x1x16xf32>, tensor<i32>) -> tensor<1x64x16xf32>
  // CHECK: lm.cached_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x1x32xf32>, tensor<1x64x16xf32>, tensor<1x64x16xf32>, tensor<i32>) -> tensor<1x1x32xf32>
  %2 = lm.cached_attention %q, %1, %1, %off {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x1x32xf32>, tensor<1x64x16xf32>, tensor<1x64x16xf32>, tensor<i32>) -> tensor<1x1x32xf32>
  return %0, %1, %2 : tensor<1x32xf32>, tensor<1x64x16xf32>, tensor<1x1x32xf32>
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<2x6xf32>, tensor<4x12xf32>) {
  // CHECK: lm.all_reduce %{{.*}} {group_size = 2 : i64, mean = true, mesh_axis = 0 : i64} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %0 = lm.all_reduce %x {mesh_axis = 0 : i64, group_size = 2 : i64, mean = true} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  // CHECK: lm.reduce_scatter %{{.*}} {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 0 : i64} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  %1 = lm.reduce_scatter %x {mesh_axis = 0 : i64, group_size = 2 : i64, dim = 0 : i64} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  // CHECK: lm.all_gather %{{.*}} {dim = 1 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<4x6xf32>) -> tensor<4x12xf32>
  %2 = lm.all_gather %x {mesh_axis = 1 : i64, group_size = 2 : i64, dim = 1 : i64} : (tensor<4x6xf32>) -> tensor<4x12xf32>
  return %0, %1, %2 : tensor<4x6xf32>, tensor<2x6xf32>, tensor<4x12xf32>
}

// CHECK-LABEL: func.func @axis_index
func.func @axis_index() -> (tensor<i32>, tensor<f32>) {
  // CHECK: lm.axis_index {group_size = 2 : i64, mesh_axis = 1 : i64} : tensor<i32>
  %0 = lm.axis_index {mesh_axis = 1 : i64, group_size = 2 : i64} : tensor<i32>
  // CHECK: lm.axis_index {group_size = 4 : i64, mesh_axis = 0 : i64} : tensor<f32>
  %1 = lm.axis_index {mesh_axis = 0 : i64, group_size = 4 : i64} : tensor<f32>
  return %0, %1 : tensor<i32>, tensor<f32>
}

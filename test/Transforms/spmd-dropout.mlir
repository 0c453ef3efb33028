// RUN: lm-opt %s -split-input-file '-lm-spmd=sequence-parallel=true' | FileCheck %s
// RUN: lm-opt %s -split-input-file '-lm-spmd=sequence-parallel=true' -lm-autodiff -lm-spmd-gradients | FileCheck %s --check-prefix=STEP

// Tests -lm-spmd on dropout keyed by element index (contract/dropout_math.h), over
// tensor = 2 with sequence parallelism. A rank's part of a split op gets the key of its
// part, i32[2, B, 2]: the rows' dropout_key, then the rank's lm.axis_index (one
// lm.where_int), so it drops what one process drops there.
//  1. lm.biased_attention with attention dropout and a T5-like bias [1, H, T, T]
//     splits by heads as lm.attention does: q, k, v column-parallel, the bias by
//     heads (one element a head), 2 heads a rank, its key the part's; its backward
//     (lm.biased_attention_grad) reads the same key.
//  2. A residual dropout after the row-parallel layer runs inside the sequence-
//     parallel region on the rank's positions [2, 2, 16], with the part's key; its
//     VJP (the same op on the cotangent) too.

// CHECK-LABEL: func.func @loss(
// CHECK-SAME: tensor<16x8xf32> {{{[^}]*}}}, lm.param = "wq", lm.sharding = {split_axes = {{\[\[}}], [1]]}}
// CHECK-SAME: tensor<8x16xf32> {{{[^}]*}}}, lm.param = "wo", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: tensor<1x2x8x8xf32> {{{[^}]*}}}, lm.param = "bias", lm.sharding = {split_axes = {{\[\[}}], [1], [], []]}}
// CHECK-SAME: %[[KEY:[^:]*]]: tensor<2x2xi32> {lm.input = "dropout_key"}
// CHECK: %[[R:.*]] = lm.axis_index {group_size = 2 : i64, mesh_axis = 1 : i64} : tensor<i32>
// CHECK-NEXT: %[[FIRST:.*]] = lm.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}0.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT: %[[PART:.*]] = lm.where_int %[[FIRST]], %[[KEY]], %[[R]] : (tensor<2x1x1xf32>, tensor<2x2xi32>, tensor<i32>) -> tensor<2x2x2xi32>
// CHECK-NEXT: lm.biased_attention {{.*}}, %[[PART]] {causal = true, dropout = 1.000000e-01 : f64, num_heads = 2 : i64, site = 1 : i64} : (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<f32>, tensor<1x2x8x8xf32>, tensor<i32>, tensor<2x2x2xi32>) -> tensor<2x8x8xf32>
// STEP-LABEL: func.func @loss_train_step(
// STEP: %[[PART:.*]] = lm.where_int {{.*}} -> tensor<2x2x2xi32>
// STEP: lm.biased_attention_grad {{.*}}, %[[PART]], %{{.*}} {causal = true, dropout = 1.000000e-01 : f64, num_heads = 2 : i64, site = 1 : i64}
// STEP-SAME: -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<1x2x8x8xf32>)
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @loss(%wq: tensor<16x16xf32> {lm.param = "wq", lm.init = {kind = "zeros"}},
                  %wk: tensor<16x16xf32> {lm.param = "wk", lm.init = {kind = "zeros"}},
                  %wv: tensor<16x16xf32> {lm.param = "wv", lm.init = {kind = "zeros"}},
                  %wo: tensor<16x16xf32> {lm.param = "wo", lm.init = {kind = "zeros"}},
                  %bias: tensor<1x4x8x8xf32> {lm.param = "bias", lm.init = {kind = "zeros"}},
                  %x: tensor<2x8x16xf32> {lm.input = "x"},
                  %key: tensor<2x2xi32> {lm.input = "dropout_key"},
                  %t: tensor<2x8xi32> {lm.input = "t", lm.vocab = 16 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %q = lm.matmul %x, %wq : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %k = lm.matmul %x, %wk : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %v = lm.matmul %x, %wv : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %one = lm.constant dense<1.0> : tensor<f32>
    %seg = lm.constant dense<0> : tensor<i32>
    %y = lm.biased_attention %q, %k, %v, %one, %bias, %seg, %key {num_heads = 4 : i64, causal = true, dropout = 1.0e-01 : f64, site = 1 : i64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<f32>, tensor<1x4x8x8xf32>, tensor<i32>, tensor<2x2xi32>) -> tensor<2x8x16xf32>
    %o = lm.matmul %y, %wo : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %l = lm.cross_entropy %o, %t : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// CHECK-LABEL: func.func @loss(
// CHECK-SAME: %[[KEY:[^:]*]]: tensor<2x2xi32> {lm.input = "dropout_key"}
// CHECK: %[[XH:.*]] = lm.take_along_axis %{{.*}} {axis = 1 : i64} : (tensor<2x4x16xf32>, tensor<1x2x1xi32>) -> tensor<2x2x16xf32>
// CHECK-NEXT: %[[R:.*]] = lm.axis_index {group_size = 2 : i64, mesh_axis = 1 : i64} : tensor<i32>
// CHECK-NEXT: %[[FIRST:.*]] = lm.constant
// CHECK-NEXT: %[[PART:.*]] = lm.where_int %[[FIRST]], %[[KEY]], %[[R]] : (tensor<2x1x1xf32>, tensor<2x2xi32>, tensor<i32>) -> tensor<2x2x2xi32>
// CHECK: %[[Y:.*]] = lm.reduce_scatter %{{.*}} {dim = 1 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x4x16xf32>) -> tensor<2x2x16xf32>
// CHECK-NEXT: %[[D:.*]] = lm.dropout %[[Y]], %[[PART]] {p = 1.000000e-01 : f64, site = 2 : i64} : (tensor<2x2x16xf32>, tensor<2x2x2xi32>) -> tensor<2x2x16xf32>
// CHECK-NEXT: lm.add %[[XH]], %[[D]] : (tensor<2x2x16xf32>, tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
// CHECK-NEXT: lm.layer_norm
// CHECK-NEXT: lm.all_gather
// STEP-LABEL: func.func @loss_train_step(
// STEP: %[[PART:.*]] = lm.where_int {{.*}} -> tensor<2x2x2xi32>
// STEP: lm.dropout %{{.*}}, %[[PART]] {p = 1.000000e-01 : f64, site = 2 : i64} : (tensor<2x2x16xf32>, tensor<2x2x2xi32>) -> tensor<2x2x16xf32>
// STEP: lm.layer_norm_grad
// STEP-NEXT: lm.add
// STEP-NEXT: lm.dropout %{{.*}}, %[[PART]] {p = 1.000000e-01 : f64, site = 2 : i64} : (tensor<2x2x16xf32>, tensor<2x2x2xi32>) -> tensor<2x2x16xf32>
// STEP-NEXT: lm.all_gather
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @loss(%w1: tensor<16x32xf32> {lm.param = "w1", lm.init = {kind = "zeros"}},
                  %w2: tensor<32x16xf32> {lm.param = "w2", lm.init = {kind = "zeros"}},
                  %g: tensor<16xf32> {lm.param = "g", lm.init = {kind = "ones"}},
                  %w3: tensor<16x4xf32> {lm.param = "w3", lm.init = {kind = "zeros"}},
                  %x: tensor<2x4x16xf32> {lm.input = "x"},
                  %key: tensor<2x2xi32> {lm.input = "dropout_key"},
                  %t: tensor<2x4xi32> {lm.input = "t", lm.vocab = 4 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %h = lm.matmul %x, %w1 : (tensor<2x4x16xf32>, tensor<16x32xf32>) -> tensor<2x4x32xf32>
    %a = lm.gelu %h : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
    %y = lm.matmul %a, %w2 : (tensor<2x4x32xf32>, tensor<32x16xf32>) -> tensor<2x4x16xf32>
    %d = lm.dropout %y, %key {p = 1.0e-01 : f64, site = 2 : i64} : (tensor<2x4x16xf32>, tensor<2x2xi32>) -> tensor<2x4x16xf32>
    %r = lm.add %x, %d : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    %n = lm.layer_norm %r, %g, %g : (tensor<2x4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
    %z = lm.matmul %n, %w3 : (tensor<2x4x16xf32>, tensor<16x4xf32>) -> tensor<2x4x4xf32>
    %l = lm.cross_entropy %z, %t : (tensor<2x4x4xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

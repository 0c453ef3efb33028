// RUN: lm-opt %s -split-input-file -lm-spmd | FileCheck %s
// RUN: lm-opt %s -split-input-file -lm-spmd -lm-autodiff -lm-spmd-gradients | FileCheck %s --check-prefix=STEP

// Tests lm.embedding's sharding rule under -lm-spmd (tensor = 2): a lookup of a
// column-split table gives its result's last dimension split, and its VJP the
// gradient of the rank's columns.
//  1. A T5 relative-position bias: a [buckets, heads] table looked up at [T, T]
//     bucket ids, transposed and reshaped to [1, heads, T, T], added to the scores
//     of lm.biased_attention. The attention's head split reaches the table: each
//     rank keeps its 2 heads' columns [6, 2], looks them up and adds its heads'
//     bias; the table's gradient is the lookup's scatter into [6, 2], scaled (by
//     1 / 2) as every split parameter's.
//  2. A lookup starts no split of its own: the columns of `table` would close in
//     the head's contraction (no norm between), but a table only a lookup reads
//     splits by rows, as the vocabulary does (spmd-vocab-parallel.mlir), and the
//     head stays whole.

// CHECK-LABEL: func.func @bias(
// CHECK-SAME: tensor<16x8xf32> {{{[^}]*}}}, lm.param = "wq", lm.sharding = {split_axes = {{\[\[}}], [1]]}}
// CHECK-SAME: tensor<8x16xf32> {{{[^}]*}}}, lm.param = "wo", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: %[[TABLE:[^:]*]]: tensor<6x2xf32> {{{[^}]*}}}, lm.param = "table", lm.sharding = {split_axes = {{\[\[}}], [1]]}}
// CHECK: %[[B:.*]] = lm.embedding %[[TABLE]], %{{.*}} : (tensor<6x2xf32>, tensor<8x8xi32>) -> tensor<8x8x2xf32>
// CHECK-NEXT: %[[T:.*]] = lm.transpose %[[B]] {permutation = array<i64: 2, 0, 1>} : (tensor<8x8x2xf32>) -> tensor<2x8x8xf32>
// CHECK-NEXT: %[[BIAS:.*]] = lm.reshape %[[T]] : (tensor<2x8x8xf32>) -> tensor<1x2x8x8xf32>
// CHECK: %[[Y:.*]] = lm.biased_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BIAS]], %{{.*}}, %{{.*}} {num_heads = 2 : i64} : ({{.*}}, tensor<1x2x8x8xf32>, {{.*}}) -> tensor<2x8x8xf32>
// CHECK-NEXT: %[[O:.*]] = lm.matmul %[[Y]], %{{.*}} : (tensor<2x8x8xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT: lm.all_reduce %[[O]] {group_size = 2 : i64, mesh_axis = 1 : i64}
// STEP-LABEL: func.func @bias_train_step(
// STEP: %[[DT:.*]] = lm.embedding_grad %{{.*}} : (tensor<8x8xi32>, tensor<8x8x2xf32>) -> tensor<6x2xf32>
// STEP: %[[G:.*]] = lm.mul %[[DT]], %{{.*}} : (tensor<6x2xf32>, tensor<f32>) -> tensor<6x2xf32>
// STEP-NEXT: return {{.*}}, %[[G]] : {{.*}}, tensor<6x2xf32>
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @bias(%wq: tensor<16x16xf32> {lm.param = "wq", lm.init = {kind = "zeros"}},
                  %wk: tensor<16x16xf32> {lm.param = "wk", lm.init = {kind = "zeros"}},
                  %wv: tensor<16x16xf32> {lm.param = "wv", lm.init = {kind = "zeros"}},
                  %wo: tensor<16x16xf32> {lm.param = "wo", lm.init = {kind = "zeros"}},
                  %table: tensor<6x4xf32> {lm.param = "table", lm.init = {kind = "zeros"}},
                  %x: tensor<2x8x16xf32> {lm.input = "x"},
                  %t: tensor<2x8xi32> {lm.input = "t", lm.vocab = 16 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %buckets = lm.constant dense<3> : tensor<8x8xi32>
    %b = lm.embedding %table, %buckets : (tensor<6x4xf32>, tensor<8x8xi32>) -> tensor<8x8x4xf32>
    %bt = lm.transpose %b {permutation = array<i64: 2, 0, 1>} : (tensor<8x8x4xf32>) -> tensor<4x8x8xf32>
    %bias = lm.reshape %bt : (tensor<4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %q = lm.matmul %x, %wq : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %k = lm.matmul %x, %wk : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %v = lm.matmul %x, %wv : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %one = lm.constant dense<1.0> : tensor<f32>
    %none = lm.constant dense<0> : tensor<i32>
    %y = lm.biased_attention %q, %k, %v, %one, %bias, %none, %none {num_heads = 4 : i64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<f32>, tensor<1x4x8x8xf32>, tensor<i32>, tensor<i32>) -> tensor<2x8x16xf32>
    %o = lm.matmul %y, %wo : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %l = lm.cross_entropy %o, %t : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// CHECK-LABEL: func.func @lookup(
// CHECK-SAME: tensor<4x4xf32> {lm.init = {kind = "zeros"}, lm.param = "table", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: tensor<4x8xf32> {lm.init = {kind = "zeros"}, lm.param = "head"}
// CHECK: lm.embedding %{{.*}} : (tensor<4x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
// CHECK: lm.all_reduce %{{.*}} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: lm.matmul %{{.*}} : (tensor<2x3x4xf32>, tensor<4x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NOT: lm.all_reduce
// CHECK: return
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @lookup(%table: tensor<8x4xf32> {lm.param = "table", lm.init = {kind = "zeros"}},
                    %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64},
                    %head: tensor<4x8xf32> {lm.param = "head", lm.init = {kind = "zeros"}},
                    %t: tensor<2x3xi32> {lm.input = "t", lm.vocab = 8 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    // The column split of `table` would close in the head's contraction over 4.
    %h = lm.embedding %table, %ids : (tensor<8x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
    %l = lm.matmul %h, %head : (tensor<2x3x4xf32>, tensor<4x8xf32>) -> tensor<2x3x8xf32>
    %c = lm.cross_entropy %l, %t : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %c : tensor<f32>
  }
}

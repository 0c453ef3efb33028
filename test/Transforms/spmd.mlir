// RUN: lm-opt %s -split-input-file -lm-spmd -lm-autodiff -lm-spmd-gradients | FileCheck %s
// RUN: lm-opt %s -split-input-file '-lm-spmd=tensor=1' -lm-autodiff '-lm-spmd-gradients=tensor=1' | FileCheck %s --check-prefix=ONE

// Tests -lm-spmd's derivation from the sharding rules on small modules: an MLP
// (matmul, bias, gelu, matmul) becomes a column/row-parallel pair with one
// all-reduce of the partial sums; a matmul whose chain ends in a layer norm (a
// whole dimension) or in a loss is left whole; the train step's gradients of
// split parameters are divided by the tensor axis and those of whole ones
// averaged over it. With tensor = 1 nothing changes.
// CHECK-LABEL: func.func @loss(
// CHECK-SAME: %[[W1:.*]]: tensor<16x8xf32> {{{.*}}lm.param = "w1", lm.sharding = {split_axes = {{\[\[}}], [1]]}}
// CHECK-SAME: %[[B1:.*]]: tensor<8xf32> {{{.*}}lm.param = "b1", lm.sharding = {split_axes = {{\[\[}}1]]}}
// CHECK-SAME: %[[W2:.*]]: tensor<8x16xf32> {{{.*}}lm.param = "w2", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: %[[G:.*]]: tensor<16xf32> {{{.*}}lm.param = "g"}
// CHECK-SAME: %[[W3:.*]]: tensor<16x4xf32> {{{.*}}lm.param = "w3"}
// CHECK-NEXT: %[[H:.*]] = lm.matmul %{{.*}}, %[[W1]] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[HB:.*]] = lm.add %[[H]], %[[B1]] : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[A:.*]] = lm.gelu %[[HB]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[P:.*]] = lm.matmul %[[A]], %[[W2]] : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: %[[S:.*]] = lm.all_reduce %[[P]] {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: lm.layer_norm %[[S]], %[[G]], %[[G]]
// CHECK-NEXT: lm.matmul %{{.*}}, %[[W3]] : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
// CHECK-NOT: lm.all_reduce
// CHECK: return
// CHECK-LABEL: func.func @loss_train_step(
// CHECK: lm.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[DW1:.*]] = lm.mul %{{.*}} : (tensor<16x8xf32>, tensor<f32>)
// CHECK-NEXT: lm.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[DB1:.*]] = lm.mul %{{.*}} : (tensor<8xf32>, tensor<f32>)
// CHECK-NEXT: lm.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[DW2:.*]] = lm.mul %{{.*}} : (tensor<8x16xf32>, tensor<f32>)
// CHECK-NEXT: %[[DG:.*]] = lm.all_reduce %{{.*}} {group_size = 2 : i64, mean = true, mesh_axis = 1 : i64} : (tensor<16xf32>)
// CHECK-NEXT: %[[DW3:.*]] = lm.all_reduce %{{.*}} {group_size = 2 : i64, mean = true, mesh_axis = 1 : i64} : (tensor<16x4xf32>)
// CHECK: return %{{.*}}, %[[DW1]], %[[DB1]], %[[DW2]], %[[DG]], %[[DW3]]
// ONE-LABEL: func.func @loss(
// ONE-NOT: lm.sharding
// ONE-NOT: lm.all_reduce
// ONE-NOT: lm.constant dense<5.000000e-01>
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @loss(%w1: tensor<16x16xf32> {lm.param = "w1", lm.init = {kind = "zeros"}},
                  %b1: tensor<16xf32> {lm.param = "b1", lm.init = {kind = "zeros"}},
                  %w2: tensor<16x16xf32> {lm.param = "w2", lm.init = {kind = "zeros"}},
                  %g: tensor<16xf32> {lm.param = "g", lm.init = {kind = "ones"}},
                  %w3: tensor<16x4xf32> {lm.param = "w3", lm.init = {kind = "zeros"}},
                  %x: tensor<2x16xf32> {lm.input = "x"},
                  %t: tensor<2xi32> {lm.input = "t", lm.vocab = 4 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %h = lm.matmul %x, %w1 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %hb = lm.add %h, %b1 : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
    %a = lm.gelu %hb : (tensor<2x16xf32>) -> tensor<2x16xf32>
    %y = lm.matmul %a, %w2 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    // A matmul whose result reaches a norm: whole.
    %n = lm.layer_norm %y, %g, %g : (tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
    // A matmul whose result reaches the loss: whole.
    %z = lm.matmul %n, %w3 : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
    %l = lm.cross_entropy %z, %t : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A parameter that one function can split and another cannot stays whole in
// both: w1 and w2 of @mlp stay whole because @head returns x @ w1.
// CHECK-LABEL: func.func @mlp(
// CHECK-NOT: lm.sharding
// CHECK-NOT: lm.all_reduce
// CHECK-LABEL: func.func @head(
// CHECK-NOT: lm.sharding
// CHECK-LABEL: func.func @other(
// CHECK-SAME: lm.param = "w3", lm.sharding
// CHECK: lm.all_reduce
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @mlp(%w1: tensor<8x8xf32> {lm.param = "w1", lm.init = {kind = "zeros"}},
                 %w2: tensor<8x8xf32> {lm.param = "w2", lm.init = {kind = "zeros"}},
                 %x: tensor<2x8xf32> {lm.input = "x"}) -> tensor<2x8xf32> {
    %h = lm.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %y = lm.matmul %h, %w2 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
  func.func @head(%w1: tensor<8x8xf32> {lm.param = "w1", lm.init = {kind = "zeros"}},
                  %x: tensor<2x8xf32> {lm.input = "x"}) -> tensor<2x8xf32> {
    %h = lm.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    return %h : tensor<2x8xf32>
  }
  func.func @other(%w3: tensor<8x8xf32> {lm.param = "w3", lm.init = {kind = "zeros"}},
                   %w4: tensor<8x8xf32> {lm.param = "w4", lm.init = {kind = "zeros"}},
                   %x: tensor<2x8xf32> {lm.input = "x"}) -> tensor<2x8xf32> {
    %h = lm.matmul %x, %w3 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %y = lm.matmul %h, %w4 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

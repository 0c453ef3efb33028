// RUN: lm-opt %s '-lm-spmd=sequence-parallel=true' -lm-autodiff -lm-spmd-gradients | FileCheck %s
// RUN: lm-opt %s -lm-spmd | FileCheck %s --check-prefix=TP

// Tests -lm-spmd's sequence-parallel option (passes/SequenceParallel.cpp) on a small
// block, x [2, 4, 16] -> column/row-parallel MLP -> residual add -> layer norm -> a
// whole matmul and the loss: the row-parallel partial sum is reduce-scattered along
// dimension 1, the input x enters the region at the residual add as the rank's half
// without communicating (lm.take_along_axis of positions 2 r, 2 r + 1, r the rank's
// lm.axis_index) while the column-parallel matmul reads it whole, the add and the norm run on [2, 2, 16], the norm's output is all-gathered
// for the whole matmul. The backward: the VJPs (an all-gather for each reduce-scatter
// and the reverse), and the norm's gradient averaged over mesh axis 1. Without the
// option (and without lm.mesh's sequence_parallel): tensor parallelism's all-reduce.
// CHECK-LABEL: func.func @loss(
// CHECK-NEXT: %[[R:.*]] = lm.axis_index {group_size = 2 : i64, mesh_axis = 1 : i64} : tensor<f32>
// CHECK-NEXT: %[[N:.*]] = lm.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[FIRST:.*]] = lm.mul %[[R]], %[[N]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[IOTA:.*]] = lm.constant dense<{{\[\[\[}}0.000000e+00], [1.000000e+00]]]> : tensor<1x2x1xf32>
// CHECK-NEXT: %[[POS:.*]] = lm.add %[[IOTA]], %[[FIRST]] : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2x1xf32>
// CHECK-NEXT: %[[IDX:.*]] = lm.to_int %[[POS]] : (tensor<1x2x1xf32>) -> tensor<1x2x1xi32>
// CHECK-NEXT: %[[XH:.*]] = lm.take_along_axis %[[X:[^ ,]*]], %[[IDX]] {axis = 1 : i64} : (tensor<2x4x16xf32>, tensor<1x2x1xi32>) -> tensor<2x2x16xf32>
// CHECK-NEXT: lm.matmul %[[X]], %{{.*}} : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: lm.gelu
// CHECK-NEXT: %[[P:.*]] = lm.matmul %{{.*}} : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[PS:.*]] = lm.reduce_scatter %[[P]] {dim = 1 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x4x16xf32>) -> tensor<2x2x16xf32>
// CHECK-NEXT: %[[R:.*]] = lm.add %[[XH]], %[[PS]] : (tensor<2x2x16xf32>, tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
// CHECK-NEXT: %[[N:.*]] = lm.layer_norm %[[R]], {{.*}} : (tensor<2x2x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x2x16xf32>
// CHECK-NEXT: %[[NG:.*]] = lm.all_gather %[[N]] {dim = 1 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x2x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: lm.matmul %[[NG]], %{{.*}} : (tensor<2x4x16xf32>, tensor<16x4xf32>) -> tensor<2x4x4xf32>
// CHECK-NOT: lm.all_reduce
// CHECK: return
// CHECK-LABEL: func.func @loss_train_step(
// CHECK: lm.take_along_axis
// CHECK: lm.reduce_scatter
// CHECK: lm.all_gather
// CHECK: lm.reduce_scatter %{{.*}} {dim = 1 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x4x16xf32>) -> tensor<2x2x16xf32>
// CHECK-NEXT: lm.layer_norm_grad %{{.*}} : (tensor<2x2x16xf32>, tensor<16xf32>, tensor<2x2x16xf32>)
// CHECK: lm.all_gather %{{.*}} {dim = 1 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x2x16xf32>) -> tensor<2x4x16xf32>
// CHECK: lm.all_reduce %{{.*}} {group_size = 2 : i64, mean = true, mesh_axis = 1 : i64} : (tensor<16xf32>)
// CHECK: return
// TP-LABEL: func.func @loss(
// TP-NOT: lm.reduce_scatter
// TP: lm.all_reduce %{{.*}} {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x4x16xf32>)
// TP-NOT: lm.all_gather
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @loss(%w1: tensor<16x32xf32> {lm.param = "w1", lm.init = {kind = "zeros"}},
                  %w2: tensor<32x16xf32> {lm.param = "w2", lm.init = {kind = "zeros"}},
                  %g: tensor<16xf32> {lm.param = "g", lm.init = {kind = "ones"}},
                  %w3: tensor<16x4xf32> {lm.param = "w3", lm.init = {kind = "zeros"}},
                  %x: tensor<2x4x16xf32> {lm.input = "x"},
                  %t: tensor<2x4xi32> {lm.input = "t", lm.vocab = 4 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %h = lm.matmul %x, %w1 : (tensor<2x4x16xf32>, tensor<16x32xf32>) -> tensor<2x4x32xf32>
    %a = lm.gelu %h : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
    %y = lm.matmul %a, %w2 : (tensor<2x4x32xf32>, tensor<32x16xf32>) -> tensor<2x4x16xf32>
    %r = lm.add %x, %y : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    %n = lm.layer_norm %r, %g, %g : (tensor<2x4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
    %z = lm.matmul %n, %w3 : (tensor<2x4x16xf32>, tensor<16x4xf32>) -> tensor<2x4x4xf32>
    %l = lm.cross_entropy %z, %t : (tensor<2x4x4xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

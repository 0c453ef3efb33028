// RUN: lm-opt %s -split-input-file -lm-autodiff -lm-data-parallel | FileCheck %s
// RUN: lm-opt %s -split-input-file -lm-autodiff '-lm-data-parallel=data=4' | FileCheck %s --check-prefix=OPTION
// RUN: lm-opt %s -split-input-file -lm-autodiff -lm-data-parallel=data=1 | FileCheck %s --check-prefix=ONE
// RUN: lm-opt %s -split-input-file -lm-autodiff '-lm-data-parallel=zero=2' | FileCheck %s --check-prefix=ZERO2
// RUN: lm-opt %s -split-input-file -lm-autodiff '-lm-data-parallel=bucket-mb=0' | FileCheck %s --check-prefix=EACH

// Tests that -lm-data-parallel averages the train step's loss, its scalar
// metrics and every parameter gradient over the data axis (the module's
// lm.mesh), and leaves the forward alone. The gradients go in buckets (25 MiB by
// default: here one), in the order the backward computes them (db, then dw),
// their all-reduces together right after the op that computes the bucket's last
// gradient; the loss is averaged right after the op that computes it.
// CHECK-LABEL: func.func @loss(
// CHECK-NOT: lm.all_reduce
// CHECK-LABEL: func.func @loss_train_step
// CHECK: %[[LL:.*]] = lm.sum_to %{{.*}} : (tensor<4x2xf32>) -> tensor<f32>
// CHECK-NEXT: %[[L:.*]] = lm.all_reduce %[[LL]] {group_size = 2 : i64, mean = true, mesh_axis = 0 : i64} : (tensor<f32>) -> tensor<f32>
// CHECK: %[[DBL:.*]] = lm.sum_to %{{.*}} : (tensor<4x2xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[DWL:.*]] = lm.matmul %{{.*}} {transpose_lhs = true}
// CHECK-NEXT: %[[DB:.*]] = lm.all_reduce %[[DBL]] {group_size = 2 : i64, mean = true, mesh_axis = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[DW:.*]] = lm.all_reduce %[[DWL]] {group_size = 2 : i64, mean = true, mesh_axis = 0 : i64} : (tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: return %[[L]], %[[DW]], %[[DB]]
// bucket-mb=0: every gradient's all-reduce right after the op that computes it.
// EACH-LABEL: func.func @loss_train_step
// EACH: %[[DBL:.*]] = lm.sum_to %{{.*}} : (tensor<4x2xf32>) -> tensor<2xf32>
// EACH-NEXT: %[[DB:.*]] = lm.all_reduce %[[DBL]]
// EACH-NEXT: %[[DWL:.*]] = lm.matmul %{{.*}} {transpose_lhs = true}
// EACH-NEXT: %[[DW:.*]] = lm.all_reduce %[[DWL]]
// EACH-NEXT: return %{{.*}}, %[[DW]], %[[DB]]
// OPTION-LABEL: func.func @loss_train_step
// OPTION-COUNT-3: group_size = 4 : i64
// ONE-LABEL: func.func @loss_train_step
// ONE-NOT: lm.all_reduce
// ZeRO-2: only the loss is averaged; lmrt reduce-scatters the gradients.
// ZERO2-LABEL: func.func @loss_train_step
// ZERO2: %[[L:.*]] = lm.all_reduce %{{.*}} : (tensor<f32>) -> tensor<f32>
// ZERO2-NOT: lm.all_reduce
// ZERO2: return %[[L]], %{{.*}}, %{{.*}} : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
module attributes {lm.mesh = {data = 2 : i64, tensor = 1 : i64, global_batch = 8 : i64}} {
  func.func @loss(%w: tensor<3x2xf32> {lm.param = "w", lm.init = {kind = "zeros"}},
                  %b: tensor<2xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                  %x: tensor<4x3xf32> {lm.input = "x"}) -> tensor<f32>
      attributes {lm.objective} {
    %y = lm.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %z = lm.add %y, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    %q = lm.mul %z, %z : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %l = lm.sum_to %q : (tensor<4x2xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Tests that without a mesh nothing changes.
// CHECK-LABEL: func.func @plain_train_step
// CHECK-NOT: lm.all_reduce
// CHECK: return
func.func @plain(%w: tensor<2xf32> {lm.param = "w", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %q = lm.mul %w, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %l = lm.sum_to %q : (tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

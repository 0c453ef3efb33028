// RUN: lm-opt %s -split-input-file -lm-autodiff | FileCheck %s

// Tests the VJPs of the collectives: each is the transposed linear map, so an
// all_gather's adjoint is a reduce_scatter along the same dimension, a
// reduce_scatter's an all_gather, an all_reduce's the same all_reduce.
// CHECK-LABEL: func.func @gather_train_step
// CHECK: lm.all_gather %arg0 {dim = 1 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x6xf32>
// CHECK: %[[DX:.*]] = lm.reduce_scatter %{{.*}} {dim = 1 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x6xf32>) -> tensor<2x3xf32>
// CHECK: return %{{.*}}, %[[DX]]
func.func @gather(%x: tensor<2x3xf32> {lm.param = "x", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %g = lm.all_gather %x {mesh_axis = 1 : i64, group_size = 2 : i64, dim = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  %l = lm.sum_to %g : (tensor<2x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @scatter_train_step
// CHECK: lm.reduce_scatter %arg0
// CHECK: %[[DX:.*]] = lm.all_gather %{{.*}} {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK: return %{{.*}}, %[[DX]]
func.func @scatter(%x: tensor<4x3xf32> {lm.param = "x", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %s = lm.reduce_scatter %x {mesh_axis = 0 : i64, group_size = 2 : i64, dim = 0 : i64} : (tensor<4x3xf32>) -> tensor<2x3xf32>
  %l = lm.sum_to %s : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @reduce_train_step
// CHECK: lm.all_reduce %arg0
// CHECK: %[[DX:.*]] = lm.all_reduce %{{.*}} {group_size = 4 : i64, mean = true, mesh_axis = 0 : i64} : (tensor<3xf32>) -> tensor<3xf32>
// CHECK: return %{{.*}}, %[[DX]]
func.func @reduce(%x: tensor<3xf32> {lm.param = "x", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %r = lm.all_reduce %x {mesh_axis = 0 : i64, group_size = 4 : i64, mean = true} : (tensor<3xf32>) -> tensor<3xf32>
  %l = lm.sum_to %r : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

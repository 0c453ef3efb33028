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

// A bf16 gather (a ZeRO-3 parameter slice under mixed precision): its adjoint sums the
// ranks' bf16 cotangents in f32 (the reduce_scatter) and rounds the slice once.
// CHECK-LABEL: func.func @gather_bf16_train_step
// CHECK: lm.all_gather %{{.*}} : (tensor<4xbf16>) -> tensor<8xbf16>
// CHECK: lm.sum_to
// The forward cast's adjoint rounds the cotangent to bf16, the gather's widens it.
// CHECK: lm.cast %{{.*}} : (tensor<8xf32>) -> tensor<8xbf16>
// CHECK-NEXT: %[[UP:.*]] = lm.cast %{{.*}} : (tensor<8xbf16>) -> tensor<8xf32>
// CHECK-NEXT: %[[S:.*]] = lm.reduce_scatter %[[UP]] {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 0 : i64} : (tensor<8xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[DOWN:.*]] = lm.cast %[[S]] : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT: %[[DX:.*]] = lm.cast %[[DOWN]] : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK: return %{{.*}}, %[[DX]]
func.func @gather_bf16(%x: tensor<4xf32> {lm.param = "x", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %b = lm.cast %x : (tensor<4xf32>) -> tensor<4xbf16>
  %g = lm.all_gather %b {mesh_axis = 0 : i64, group_size = 2 : i64, dim = 0 : i64} : (tensor<4xbf16>) -> tensor<8xbf16>
  %f = lm.cast %g : (tensor<8xbf16>) -> tensor<8xf32>
  %l = lm.sum_to %f : (tensor<8xf32>) -> tensor<f32>
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

// RUN: lm-opt %s -split-input-file -lm-autodiff -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=bucket-mb=0 prefetch-mb=0' -lm-mixed-precision | FileCheck %s
// RUN: lm-opt %s -split-input-file -lm-autodiff -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=data=3 bucket-mb=0 prefetch-mb=0' -lm-mixed-precision | FileCheck %s --check-prefix=THREE
// RUN: lm-opt %s -split-input-file -lm-autodiff -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=bucket-mb=0 prefetch-mb=0.00002' -lm-mixed-precision | FileCheck %s --check-prefix=AHEAD
// RUN: lm-opt %s -split-input-file -lm-autodiff=loss-scale=1 -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=bucket-mb=0 prefetch-mb=0' '-lm-mixed-precision=precision=fp16' | FileCheck %s --check-prefix=FP16
// RUN: lm-opt %s -split-input-file -lm-autodiff -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=bucket-mb=0 prefetch-mb=0' '-lm-mixed-precision=precision=fp32' | FileCheck %s --check-prefix=FP32

// Tests that under ZeRO stage 3 -lm-mixed-precision gathers the bf16 (f16) slice of a
// parameter a GEMM reads (docs/distributed.md, "ZeRO with mixed precision"): the cast
// moves from the gathered whole to the rank's slice, right before the gather, and the
// gather moves bf16 (half the bytes); a cast rounds each element alone, so the
// gathered bf16 tensor has the bits of the f32 gather's cast. One cast per gather (the
// bf16 slice is that gather's temporary). A parameter no GEMM reads (b, added) is
// gathered in f32, as the op reads it. The module is zero-shard-params.mlir's.

// CHECK-LABEL: func.func @loss_train_step(
// The forward: w1's slice cast, gathered in bf16, reshaped, read by the matmul.
// CHECK: %[[C1:.*]] = lm.cast %arg0 : (tensor<3xf32>) -> tensor<3xbf16>
// CHECK-NEXT: %[[G1:.*]] = lm.all_gather %[[C1]] {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 0 : i64} : (tensor<3xbf16>) -> tensor<6xbf16>
// CHECK-NEXT: %[[W1:.*]] = lm.reshape %[[G1]] : (tensor<6xbf16>) -> tensor<3x2xbf16>
// CHECK: lm.matmul %{{.*}}, %[[W1]] : (tensor<4x3xbf16>, tensor<3x2xbf16>) -> tensor<4x2xf32>
// CHECK: lm.all_gather %arg2 {{.*}} : (tensor<1xf32>) -> tensor<2xf32>
// CHECK-NEXT: lm.add
// CHECK: lm.cast %arg1 : (tensor<2xf32>) -> tensor<2xbf16>
// CHECK-NEXT: lm.all_gather {{.*}} : (tensor<2xbf16>) -> tensor<4xbf16>
// CHECK-NEXT: lm.reshape {{.*}} : (tensor<4xbf16>) -> tensor<2x2xbf16>
// The backward's read of w2 casts and gathers again, its own temporaries.
// CHECK: lm.all_reduce
// CHECK: lm.cast %arg1 : (tensor<2xf32>) -> tensor<2xbf16>
// CHECK-NEXT: lm.all_gather {{.*}} : (tensor<2xbf16>) -> tensor<4xbf16>
// CHECK-NEXT: lm.reshape {{.*}} : (tensor<4xbf16>) -> tensor<2x2xbf16>
// CHECK-NEXT: lm.matmul {{.*}} {transpose_rhs = true}
// No f32 gather of a GEMM's weight, and the gradients stay f32.
// CHECK-NOT: lm.all_gather {{.*}}xf32>) -> tensor<{{[0-9]+}}xf32>
// CHECK-NOT: lm.reduce_scatter {{.*}}bf16
// CHECK: return

// Three ranks: w2's 4 elements are padded to 2 a rank; the gather of the bf16 slices
// is cut to 4 in bf16.
// THREE-LABEL: func.func @loss_train_step(
// THREE: lm.cast %arg1 : (tensor<2xf32>) -> tensor<2xbf16>
// THREE-NEXT: lm.all_gather {{.*}} {dim = 0 : i64, group_size = 3 : i64, mesh_axis = 0 : i64} : (tensor<2xbf16>) -> tensor<6xbf16>
// THREE-NEXT: lm.slice {{.*}}limit = array<i64: 4>{{.*}} : (tensor<6xbf16>) -> tensor<4xbf16>
// THREE-NEXT: lm.reshape {{.*}} : (tensor<4xbf16>) -> tensor<2x2xbf16>

// Prefetch (zero-shard-params.mlir's AHEAD): the cast goes with its gather, ahead of
// the op; the cut and reshape stay at the op.
// AHEAD-LABEL: func.func @loss_train_step(
// AHEAD: lm.all_gather {{.*}} -> tensor<6xbf16>
// AHEAD-NEXT: lm.reshape
// AHEAD-NEXT: lm.all_gather %arg2 {{.*}} -> tensor<2xf32>
// AHEAD-NEXT: lm.matmul
// AHEAD-NEXT: lm.cast %arg1 : (tensor<2xf32>) -> tensor<2xbf16>
// AHEAD-NEXT: %[[G2:.*]] = lm.all_gather {{.*}} -> tensor<4xbf16>
// AHEAD-NEXT: lm.add
// AHEAD: lm.reshape %[[G2]]
// AHEAD-NEXT: lm.cast %arg1 : (tensor<2xf32>) -> tensor<2xbf16>
// AHEAD-NEXT: %[[G3:.*]] = lm.all_gather {{.*}} -> tensor<4xbf16>
// AHEAD-NEXT: lm.matmul
// AHEAD: lm.all_reduce
// AHEAD: lm.reshape %[[G3]]
// AHEAD-NEXT: lm.matmul {{.*}} {transpose_rhs = true}

// FP16-LABEL: func.func @loss_train_step(
// FP16: lm.cast %arg0 : (tensor<3xf32>) -> tensor<3xf16>
// FP16-NEXT: lm.all_gather {{.*}} : (tensor<3xf16>) -> tensor<6xf16>
// FP32-LABEL: func.func @loss_train_step(
// FP32-NOT: lm.cast
// FP32: lm.all_gather %arg0 {{.*}} : (tensor<3xf32>) -> tensor<6xf32>
module attributes {lm.mesh = {data = 2 : i64, tensor = 1 : i64, global_batch = 8 : i64, zero = 3 : i64}} {
  func.func @loss(%w1: tensor<3x2xf32> {lm.param = "w1", lm.init = {kind = "zeros"}},
                  %w2: tensor<2x2xf32> {lm.param = "w2", lm.init = {kind = "zeros"}},
                  %b: tensor<2xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                  %x: tensor<4x3xf32> {lm.input = "x"}) -> tensor<f32>
      attributes {lm.objective} {
    %y = lm.matmul %x, %w1 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %h = lm.add %y, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
    %z = lm.matmul %h, %w2 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
    %q = lm.mul %z, %z : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %l = lm.sum_to %q : (tensor<4x2xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A gather that something besides the cast reads stays f32 (gathering both would move
// more bytes than gathering one): the cast follows it, as without ZeRO.
// CHECK-LABEL: func.func @shared(
// CHECK: %[[G:.*]] = lm.all_gather %arg0 {{.*}} : (tensor<8xf32>) -> tensor<16xf32>
// CHECK-NEXT: %[[B:.*]] = lm.cast %[[G]] : (tensor<16xf32>) -> tensor<16xbf16>
// CHECK-NEXT: lm.reshape %[[B]] : (tensor<16xbf16>) -> tensor<4x4xbf16>
// CHECK: lm.sum_to %[[G]]
func.func @shared(%s: tensor<8xf32>, %x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<f32>) {
  %g = lm.all_gather %s {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 0 : i64} : (tensor<8xf32>) -> tensor<16xf32>
  %w = lm.reshape %g : (tensor<16xf32>) -> tensor<4x4xf32>
  %y = lm.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %n = lm.sum_to %g : (tensor<16xf32>) -> tensor<f32>
  return %y, %n : tensor<2x4xf32>, tensor<f32>
}

// -----

// A widening cast of a gathered bf16 tensor stays after the gather (before it, the
// ranks would move twice the bytes).
// CHECK-LABEL: func.func @widening(
// CHECK: %[[G:.*]] = lm.all_gather %arg0 {{.*}} : (tensor<8xbf16>) -> tensor<16xbf16>
// CHECK-NEXT: lm.cast %[[G]] : (tensor<16xbf16>) -> tensor<16xf32>
func.func @widening(%s: tensor<8xbf16>) -> tensor<16xf32> {
  %g = lm.all_gather %s {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 0 : i64} : (tensor<8xbf16>) -> tensor<16xbf16>
  %f = lm.cast %g : (tensor<16xbf16>) -> tensor<16xf32>
  return %f : tensor<16xf32>
}

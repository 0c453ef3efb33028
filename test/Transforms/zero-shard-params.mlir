// RUN: lm-opt %s -lm-autodiff -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=bucket-mb=0 prefetch-mb=0' | FileCheck %s
// RUN: lm-opt %s -lm-autodiff -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=data=3 bucket-mb=0 prefetch-mb=0' | FileCheck %s --check-prefix=THREE
// RUN: lm-opt %s -lm-autodiff -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=zero=2 bucket-mb=0' | FileCheck %s --check-prefix=STAGE2
// RUN: lm-opt %s -lm-autodiff -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=prefetch-mb=25' | FileCheck %s --check-prefix=BUCKET
// RUN: lm-opt %s -lm-autodiff '-lm-data-parallel=zero=1' -canonicalize -cse '-lm-zero-shard-params=zero=1' | FileCheck %s --check-prefix=STAGE1
// RUN: lm-opt %s -lm-autodiff -lm-data-parallel -canonicalize -cse '-lm-zero-shard-params=bucket-mb=0 prefetch-mb=0.00002' | FileCheck %s --check-prefix=AHEAD

// Tests that -lm-zero-shard-params (ZeRO stage 3) makes every parameter argument
// the rank's padded slice of the flattened tensor (w: 6 elements, 3 per rank of 2;
// b: 2, 1 per rank), gathers it right before each op that reads it (w2 twice: in
// the forward's matmul and in the backward's, never one value across the step),
// and reduce-scatters every gradient, flattened, then divides it by D (the
// rank-order sum / D that -lm-data-parallel's all-reduce computes); the loss keeps
// its all-reduce. The whole types stay in lm.zero_logical. (prefetch-mb=0, the
// default: no prefetch, the gathers where they are made; AHEAD and BUCKET below prefetch.)
// CHECK-LABEL: func.func @loss(
// CHECK-SAME: %[[W1:.*]]: tensor<3xf32> {lm.init = {kind = "zeros"}, lm.param = "w1", lm.zero_logical = tensor<3x2xf32>}
// CHECK-SAME: %[[W2:.*]]: tensor<2xf32> {lm.init = {kind = "zeros"}, lm.param = "w2", lm.zero_logical = tensor<2x2xf32>}
// CHECK-SAME: %[[B:.*]]: tensor<1xf32> {lm.init = {kind = "zeros"}, lm.param = "b", lm.zero_logical = tensor<2xf32>}
// CHECK: %[[G1:.*]] = lm.all_gather %[[W1]] {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 0 : i64} : (tensor<3xf32>) -> tensor<6xf32>
// CHECK: %[[R1:.*]] = lm.reshape %[[G1]] : (tensor<6xf32>) -> tensor<3x2xf32>
// CHECK: lm.matmul %{{.*}}, %[[R1]]

// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: tensor<3xf32> {{.*}}lm.param = "w1"
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {lm.grad_of = "w1"}, tensor<2xf32> {lm.grad_of = "w2"}, tensor<1xf32> {lm.grad_of = "b"})
// The forward: one gather per reading op.
// CHECK: lm.all_gather %arg0 {{.*}} -> tensor<6xf32>
// CHECK-NEXT: lm.reshape {{.*}} -> tensor<3x2xf32>
// CHECK-NEXT: lm.matmul
// CHECK: lm.all_gather %arg2 {{.*}} : (tensor<1xf32>) -> tensor<2xf32>
// CHECK-NEXT: lm.add
// CHECK: lm.all_gather %arg1 {{.*}} -> tensor<4xf32>
// CHECK-NEXT: lm.reshape {{.*}} -> tensor<2x2xf32>
// CHECK-NEXT: lm.matmul
// The loss, averaged right after it is computed (-lm-data-parallel).
// CHECK: %[[L:.*]] = lm.all_reduce %{{.*}} {group_size = 2 : i64, mean = true, mesh_axis = 0 : i64} : (tensor<f32>) -> tensor<f32>
// The backward reads w2 again (dh = dz w2^T): gathered again, right before.
// CHECK: lm.all_gather %arg1 {{.*}} -> tensor<4xf32>
// CHECK-NEXT: lm.reshape {{.*}} -> tensor<2x2xf32>
// CHECK-NEXT: lm.matmul
// CHECK-NOT: lm.all_gather
// Each gradient, right after it is computed (so the whole local gradient is a
// short-lived temporary), flattened, reduce-scattered (the rank-order sum) and
// divided by D: the arithmetic of the all-reduce's mean. The loss is averaged whole.
// CHECK: %[[DW2:.*]] = lm.matmul %{{.*}}, %{{.*}} {transpose_lhs = true} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[F2:.*]] = lm.reshape %[[DW2]] : (tensor<2x2xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[R2:.*]] = lm.reduce_scatter %[[F2]] {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 0 : i64} : (tensor<4xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[C2:.*]] = lm.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[S2:.*]] = lm.div %[[R2]], %[[C2]] : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK-NEXT: %[[DB:.*]] = lm.sum_to
// CHECK-NEXT: lm.reduce_scatter %[[DB]] {{.*}} : (tensor<2xf32>) -> tensor<1xf32>
// CHECK-NEXT: lm.constant
// CHECK-NEXT: %[[S3:.*]] = lm.div %{{.*}} : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
// CHECK-NEXT: %[[DW1:.*]] = lm.matmul
// CHECK-NEXT: lm.reshape %[[DW1]] : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK-NEXT: lm.reduce_scatter {{.*}} : (tensor<6xf32>) -> tensor<3xf32>
// CHECK-NEXT: lm.constant
// CHECK-NEXT: %[[S1:.*]] = lm.div %{{.*}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT: return %[[L]], %[[S1]], %[[S2]], %[[S3]]

// Prefetch, the AHEAD prefix (a cap of 0.00002 MiB, 20 bytes): the ops that read gathered
// parameters are the forward's matmul (w1, 24 bytes gathered), add (b, 8), matmul (w2,
// 16) and the backward's matmul (w2, 16). Each op's gathers move to right before the
// earliest op such that the gathers issued ahead of it stay within 20 bytes: b's before
// the first matmul (8), w2's before the add (16; with b's, 24 would not fit), the
// backward's w2 before the forward's matmul that reads w2 (16), across the loss's
// all-reduce; their cut and reshape stay at the op.
// AHEAD-LABEL: func.func @loss_train_step(
// AHEAD: %[[G1:.*]] = lm.all_gather %arg0 {{.*}} -> tensor<6xf32>
// AHEAD-NEXT: %[[W1:.*]] = lm.reshape %[[G1]]
// AHEAD-NEXT: %[[GB:.*]] = lm.all_gather %arg2 {{.*}} -> tensor<2xf32>
// AHEAD-NEXT: %[[Y:.*]] = lm.matmul %{{.*}}, %[[W1]]
// AHEAD-NEXT: %[[G2:.*]] = lm.all_gather %arg1 {{.*}} -> tensor<4xf32>
// AHEAD-NEXT: %[[H:.*]] = lm.add %[[Y]], %[[GB]]
// AHEAD-NEXT: %[[W2:.*]] = lm.reshape %[[G2]]
// AHEAD-NEXT: %[[G3:.*]] = lm.all_gather %arg1 {{.*}} -> tensor<4xf32>
// AHEAD-NEXT: lm.matmul %[[H]], %[[W2]]
// AHEAD: lm.all_reduce
// AHEAD: %[[W3:.*]] = lm.reshape %[[G3]]
// AHEAD-NEXT: lm.matmul %{{.*}}, %[[W3]] {transpose_rhs = true}
// AHEAD-NOT: lm.all_gather
// AHEAD: return

// The default bucket (25 MiB) holds all three gradients: each flattened right where the
// last one (dw1) is computed, then the three reduce-scatters side by side (lmrt runs them
// as one collective), then the divisions.
// A prefetch of 25 MiB issues all four gathers ahead of the first matmul.
// BUCKET-LABEL: func.func @loss_train_step(
// BUCKET: lm.all_gather %arg0
// BUCKET-NEXT: lm.reshape
// BUCKET-NEXT: lm.all_gather %arg2
// BUCKET-NEXT: lm.all_gather %arg1
// BUCKET-NEXT: lm.all_gather %arg1
// BUCKET-NEXT: lm.matmul
// BUCKET-NOT: lm.all_gather
// BUCKET: lm.matmul %{{.*}}, %{{.*}} {transpose_lhs = true} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// BUCKET-NOT: lm.reduce_scatter
// BUCKET: lm.sum_to
// BUCKET-NOT: lm.reduce_scatter
// BUCKET: lm.matmul {{.*}} -> tensor<3x2xf32>
// BUCKET-NEXT: lm.reshape {{.*}} : (tensor<2x2xf32>) -> tensor<4xf32>
// BUCKET-NEXT: lm.reshape {{.*}} : (tensor<3x2xf32>) -> tensor<6xf32>
// BUCKET-NEXT: lm.reduce_scatter {{.*}} : (tensor<4xf32>) -> tensor<2xf32>
// BUCKET-NEXT: lm.reduce_scatter {{.*}} : (tensor<2xf32>) -> tensor<1xf32>
// BUCKET-NEXT: lm.reduce_scatter {{.*}} : (tensor<6xf32>) -> tensor<3xf32>
// BUCKET-NEXT: lm.constant
// BUCKET-NEXT: lm.div
// BUCKET-NEXT: lm.constant
// BUCKET-NEXT: lm.div
// BUCKET-NEXT: lm.constant
// BUCKET-NEXT: lm.div
// BUCKET-NEXT: return

// Three ranks: w1's 6 elements are 2 a rank; w2's 4 are 2 a rank, padded to 6
// (the gather cut to 4 by lm.slice, the gradient padded with zeros by
// lm.slice_grad); b's 2 are 1 a rank, padded to 3.
// THREE-LABEL: func.func @loss_train_step(
// THREE-SAME: -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "w1"}, tensor<2xf32> {lm.grad_of = "w2"}, tensor<1xf32> {lm.grad_of = "b"})
// THREE: lm.all_gather %arg1 {dim = 0 : i64, group_size = 3 : i64, mesh_axis = 0 : i64} : (tensor<2xf32>) -> tensor<6xf32>
// THREE-NEXT: lm.slice {{.*}}limit = array<i64: 4>{{.*}} : (tensor<6xf32>) -> tensor<4xf32>
// THREE-NEXT: lm.reshape {{.*}} : (tensor<4xf32>) -> tensor<2x2xf32>
// THREE: lm.reshape %{{.*}} : (tensor<2x2xf32>) -> tensor<4xf32>
// THREE-NEXT: lm.slice_grad {{.*}} : (tensor<4xf32>) -> tensor<6xf32>
// THREE-NEXT: lm.reduce_scatter {{.*}} : (tensor<6xf32>) -> tensor<2xf32>

// Stage 2: the parameters stay whole (no gathers, no lm.zero_logical), and each
// gradient is reduce-scattered as under stage 3, right after it is computed: the
// train step returns the slices.
// STAGE2-LABEL: func.func @loss_train_step(
// STAGE2-SAME: %arg0: tensor<3x2xf32> {lm.init = {kind = "zeros"}, lm.param = "w1"}
// STAGE2-SAME: -> (tensor<f32>, tensor<3xf32> {lm.grad_of = "w1"}, tensor<2xf32> {lm.grad_of = "w2"}, tensor<1xf32> {lm.grad_of = "b"})
// STAGE2-NOT: lm.all_gather
// STAGE2: %[[DW2:.*]] = lm.matmul %{{.*}}, %{{.*}} {transpose_lhs = true} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// STAGE2-NEXT: lm.reshape %[[DW2]] : (tensor<2x2xf32>) -> tensor<4xf32>
// STAGE2-NEXT: lm.reduce_scatter {{.*}} : (tensor<4xf32>) -> tensor<2xf32>
// STAGE2-NEXT: lm.constant dense<2.000000e+00>
// STAGE2-NEXT: lm.div
// STAGE2-NOT: lm.all_gather
// STAGE2: return

// Stage 1 (and 0): nothing changes; -lm-data-parallel all-reduces the gradients.
// STAGE1-LABEL: func.func @loss_train_step(
// STAGE1-SAME: -> (tensor<f32>, tensor<3x2xf32> {lm.grad_of = "w1"}, tensor<2x2xf32> {lm.grad_of = "w2"}, tensor<2xf32> {lm.grad_of = "b"})
// STAGE1-NOT: lm.all_gather
// STAGE1-NOT: lm.reduce_scatter
// STAGE1: return
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

// RUN: lm-opt %s -lm-fuse -split-input-file | FileCheck %s
// RUN: lm-opt %s -lm-fuse=max-ops=1 -split-input-file | FileCheck %s --check-prefix=MAX1

// Tests what -lm-fuse leaves apart: a reduction over an inner dimension stays
// the library's lm.sum_to (its producer is fused alone).
// CHECK-LABEL: func.func @inner_reduction
// CHECK:       lm.fusion
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.mul
// CHECK-NEXT:    lm.yield
// CHECK:       lm.sum_to
// CHECK-SAME:  -> tensor<2x1x4xf32>
// MAX1-LABEL:  func.func @inner_reduction
// MAX1-COUNT-1: lm.fusion
func.func @inner_reduction(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %m = lm.mul %x, %y : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %s = lm.sum_to %m : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %s : tensor<2x1x4xf32>
}

// -----

// Tests that a GEMM with a transposed lhs (a weight gradient) gets no epilogue.
// CHECK-LABEL: func.func @transposed_lhs
// CHECK:       lm.matmul
// CHECK-SAME:  transpose_lhs = true
// CHECK-NEXT:  lm.fusion
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.add
func.func @transposed_lhs(%x: tensor<8x4xf32>, %dy: tensor<8x6xf32>, %acc: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %g = lm.matmul %x, %dy {transpose_lhs = true} : (tensor<8x4xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %s = lm.add %g, %acc : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %s : tensor<4x6xf32>
}

// -----

// Tests the placement rule: %a is read by a library op (layer_norm) whose
// result the add needs, so no single point comes after every input and
// before every outside user of the group {add, neg}: each is fused alone.
// CHECK-LABEL: func.func @no_placement
// CHECK:       %[[A:.*]] = lm.fusion
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.neg
// CHECK:       %[[L:.*]] = lm.layer_norm %[[A]]
// CHECK:       lm.fusion %[[A]], %[[L]]
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.add
// CHECK-NEXT:    lm.yield
func.func @no_placement(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %a = lm.neg %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = lm.layer_norm %a, %g, %b : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %s = lm.add %a, %l : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}

// -----

// Tests multi-output fusion: %a is used by the group and after it, so it is
// both computed inside and returned.
// CHECK-LABEL: func.func @multi_output
// CHECK:       %[[F:.*]]:2 = lm.fusion
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    %[[N:.*]] = lm.neg
// CHECK-NEXT:    %[[G:.*]] = lm.gelu %[[N]]
// CHECK-NEXT:    lm.yield %[[N]], %[[G]]
// CHECK:       lm.layer_norm %[[F]]#0
func.func @multi_output(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %a = lm.neg %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = lm.gelu %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = lm.layer_norm %a, %g, %b : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y, %l : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Tests that the operands of an epilogue's GEMM are never fused into its
// group, even when their shape is the group's (a square weight): the GEMM
// reads them whole before the epilogue runs.
// CHECK-LABEL: func.func @square_gemm_operand
// CHECK:       %[[A:.*]] = lm.fusion %arg0
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.neg
// CHECK-NEXT:    lm.yield
// CHECK:       lm.fusion %[[A]], %arg1
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.matmul
// CHECK-NEXT:    lm.add
// CHECK-NEXT:    lm.yield
func.func @square_gemm_operand(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h = lm.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = lm.matmul %h, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = lm.add %h, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The same with the add's operands swapped, so the GEMM joins the group before
// its operand's producer is considered.
// CHECK-LABEL: func.func @square_gemm_operand_swapped
// CHECK:       %[[A:.*]] = lm.fusion %arg0
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.neg
// CHECK-NEXT:    lm.yield
// CHECK:       lm.fusion %[[A]], %arg1
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.matmul
// CHECK-NEXT:    lm.add
// CHECK-NEXT:    lm.yield
func.func @square_gemm_operand_swapped(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h = lm.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = lm.matmul %h, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = lm.add %p, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that lm.where_int (i32 values) is never a group member: the float mask
// that feeds it is fused alone, and it stays a plan step of its own after the
// group (a generated kernel computes in one float type).
// CHECK-LABEL: func.func @where_int_apart
// CHECK:       %[[M:.*]] = lm.fusion
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.ne
// CHECK-NEXT:    lm.mul
// CHECK-NEXT:    lm.yield
// CHECK:       lm.where_int %[[M]], %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
// CHECK-NOT:   lm.fusion
func.func @where_int_apart(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %a: tensor<4x8xi32>, %b: tensor<4x8xi32>) -> tensor<4x8xi32> {
  %n = lm.ne %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = lm.mul %n, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = lm.where_int %m, %a, %b : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
  return %r : tensor<4x8xi32>
}

// RUN: lm-opt %s -split-input-file -canonicalize | FileCheck %s

// Tests that a reshape to the operand's own type folds away.
// CHECK-LABEL: func.func @identity_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @identity_reshape(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = lm.reshape %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that a chain of reshapes becomes one reshape of the original value.
// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[R:.*]] = lm.reshape %[[X]] : (tensor<4x8xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<4x8xf32>) -> tensor<2x16xf32> {
  %0 = lm.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>
  %1 = lm.reshape %0 : (tensor<32xf32>) -> tensor<8x4xf32>
  %2 = lm.reshape %1 : (tensor<8x4xf32>) -> tensor<2x16xf32>
  return %2 : tensor<2x16xf32>
}

// -----

// Tests that reshaping there and back folds to the original value.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = lm.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>
  %1 = lm.reshape %0 : (tensor<32xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Tests that a reshape of a constant folds into a constant of the new shape.
// CHECK-LABEL: func.func @reshape_constant
// CHECK-NEXT: %[[C:.*]] = lm.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT: return %[[C]]
func.func @reshape_constant() -> tensor<2x2xf32> {
  %c = lm.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = lm.reshape %c : (tensor<4xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// Tests that an identity permutation folds away.
// CHECK-LABEL: func.func @identity_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @identity_transpose(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = lm.transpose %x {permutation = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Tests that two transposes compose into one, with permutation c[i] = p1[p2[i]]:
// p1 = [1, 2, 0] gives 3x4x2, p2 = [0, 2, 1] gives 3x2x4, so c = [1, 0, 2].
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = lm.transpose %[[X]] {permutation = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  %0 = lm.transpose %x {permutation = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = lm.transpose %0 {permutation = array<i64: 0, 2, 1>} : (tensor<3x4x2xf32>) -> tensor<3x2x4xf32>
  return %1 : tensor<3x2x4xf32>
}

// -----

// Tests that a transpose followed by its inverse folds to the original value.
// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = lm.transpose %x {permutation = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = lm.transpose %0 {permutation = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// Tests that a transposed splat is a splat of the new shape.
// CHECK-LABEL: func.func @transpose_splat
// CHECK-NEXT: %[[C:.*]] = lm.constant dense<5.000000e-01> : tensor<3x2xf64>
// CHECK-NEXT: return %[[C]]
func.func @transpose_splat() -> tensor<3x2xf64> {
  %c = lm.constant dense<0.5> : tensor<2x3xf64>
  %0 = lm.transpose %c {permutation = array<i64: 1, 0>} : (tensor<2x3xf64>) -> tensor<3x2xf64>
  return %0 : tensor<3x2xf64>
}

// -----

// Tests that unused lm ops are erased (they are Pure) and used ones are kept.
// CHECK-LABEL: func.func @dead_ops
// CHECK-NOT: lm.gelu
// CHECK: lm.neg
func.func @dead_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = lm.gelu %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = lm.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Tests that arithmetic on splat constants folds, with broadcasting, into a
// splat of the result type.
// CHECK-LABEL: func.func @splat_arith
// CHECK-NEXT: %[[C:.*]] = lm.constant dense<-7.500000e+00> : tensor<2x3xf32>
// CHECK-NEXT: return %[[C]]
func.func @splat_arith() -> tensor<2x3xf32> {
  %a = lm.constant dense<2.0> : tensor<2x3xf32>
  %b = lm.constant dense<1.5> : tensor<f32>
  %0 = lm.mul %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = lm.add %0, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = lm.div %1, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = lm.sub %2, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = lm.neg %3 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = lm.sub %4, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = lm.mul %5, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = lm.sub %6, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %7 : tensor<2x3xf32>
}

// -----

// Tests that x + (-0), (-0) + x, x - 0, x * 1, x / 1 and -(-x) fold to x, but
// not when the identity broadcasts x to a bigger shape.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK: %[[B:.*]] = lm.add %{{.*}}, %[[X]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[X]], %[[B]]
func.func @identities(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<2x3xf32>) {
  %zero = lm.constant dense<0.0> : tensor<3xf32>
  %negzero = lm.constant dense<-0.0> : tensor<3xf32>
  %one = lm.constant dense<1.0> : tensor<f32>
  %zeros = lm.constant dense<0.0> : tensor<2x3xf32>
  %0 = lm.add %x, %negzero : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = lm.add %negzero, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = lm.mul %1, %one : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %3 = lm.mul %one, %2 : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = lm.div %3, %one : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %5 = lm.sub %4, %zero : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %6 = lm.neg %5 : (tensor<3xf32>) -> tensor<3xf32>
  %7 = lm.neg %6 : (tensor<3xf32>) -> tensor<3xf32>
  %8 = lm.add %zeros, %7 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %7, %8 : tensor<3xf32>, tensor<2x3xf32>
}

// -----

// Tests that adding +0.0 is not folded: it is not the identity for x = -0.0
// (-0.0 + 0.0 = +0.0), on either side; nor is 0 - x (that is -x, and +0 for x = +0).
// CHECK-LABEL: func.func @not_identities
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK: %[[Z:.*]] = lm.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: %[[A:.*]] = lm.add %[[X]], %[[Z]]
// CHECK: %[[B:.*]] = lm.add %[[Z]], %[[X]]
// CHECK: %[[C:.*]] = lm.sub %[[Z]], %[[X]]
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @not_identities(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %zero = lm.constant dense<0.0> : tensor<3xf32>
  %0 = lm.add %x, %zero : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = lm.add %zero, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = lm.sub %zero, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Tests that a slice selecting everything, and its adjoint, fold away, while
// a proper slice stays.
// CHECK-LABEL: func.func @full_slice
// CHECK-SAME: (%[[X:.*]]: tensor<6x1xf32>, %[[D:.*]]: tensor<6x1xf32>)
// CHECK-NEXT: %[[S:.*]] = lm.slice %[[X]] {{.*}} -> tensor<5x1xf32>
// CHECK-NEXT: return %[[X]], %[[D]], %[[S]]
func.func @full_slice(%x: tensor<6x1xf32>, %d: tensor<6x1xf32>) -> (tensor<6x1xf32>, tensor<6x1xf32>, tensor<5x1xf32>) {
  %0 = lm.slice %x {start = array<i64: 0, 0>, limit = array<i64: 6, 1>, stride = array<i64: 1, 3>} : (tensor<6x1xf32>) -> tensor<6x1xf32>
  %1 = lm.slice_grad %d {start = array<i64: 0, 0>, limit = array<i64: 6, 1>, stride = array<i64: 1, 1>} : (tensor<6x1xf32>) -> tensor<6x1xf32>
  %2 = lm.slice %x {start = array<i64: 1, 0>, limit = array<i64: 6, 1>, stride = array<i64: 1, 1>} : (tensor<6x1xf32>) -> tensor<5x1xf32>
  return %0, %1, %2 : tensor<6x1xf32>, tensor<6x1xf32>, tensor<5x1xf32>
}

// -----

// Tests that the backward of a fused QKV projection sliced into three column
// blocks, add(add(slice_grad(dv), slice_grad(dk)), slice_grad(dq)), becomes the
// concatenation of dq, dk, dv: the whole-tensor slice_grad folds away.
// CHECK-LABEL: func.func @qkv_slice_grads_concat
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x4x8xf32>, %[[K:[^:]*]]: tensor<2x4x8xf32>, %[[V:[^:]*]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[KV:.*]] = lm.concat %[[K]], %[[V]] {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[QKV:.*]] = lm.concat %[[Q]], %[[KV]] {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x16xf32>) -> tensor<2x4x24xf32>
// CHECK-NEXT: return %[[QKV]]
func.func @qkv_slice_grads_concat(%dq: tensor<2x4x8xf32>, %dk: tensor<2x4x8xf32>, %dv: tensor<2x4x8xf32>) -> tensor<2x4x24xf32> {
  %0 = lm.slice_grad %dv {limit = array<i64: 2, 4, 24>, start = array<i64: 0, 0, 16>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  %1 = lm.slice_grad %dk {limit = array<i64: 2, 4, 16>, start = array<i64: 0, 0, 8>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  %2 = lm.slice_grad %dq {limit = array<i64: 2, 4, 8>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  %3 = lm.add %0, %1 : (tensor<2x4x24xf32>, tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
  %4 = lm.add %3, %2 : (tensor<2x4x24xf32>, tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
  return %4 : tensor<2x4x24xf32>
}

// -----

// Tests that slices that are not adjacent, that differ on two dimensions, or
// that are strided stay as they are (their sum has zeros a concat lacks).
// CHECK-LABEL: func.func @slice_grads_not_adjacent
// CHECK-NOT: lm.concat
// CHECK: return
func.func @slice_grads_not_adjacent(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>, %c: tensor<1x4xf32>, %d: tensor<2x2xf32>)
    -> (tensor<2x12xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = lm.slice_grad %a {limit = array<i64: 2, 4>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %1 = lm.slice_grad %b {limit = array<i64: 2, 12>, start = array<i64: 0, 8>, stride = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %2 = lm.add %0, %1 : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %3 = lm.slice_grad %c {limit = array<i64: 1, 4>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4xf32>) -> tensor<2x8xf32>
  %4 = lm.slice_grad %b {limit = array<i64: 2, 8>, start = array<i64: 0, 4>, stride = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x8xf32>
  %5 = lm.add %3, %4 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %6 = lm.slice_grad %d {limit = array<i64: 2, 4>, start = array<i64: 0, 0>, stride = array<i64: 1, 2>} : (tensor<2x2xf32>) -> tensor<2x8xf32>
  %7 = lm.slice_grad %a {limit = array<i64: 2, 8>, start = array<i64: 0, 4>, stride = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x8xf32>
  %8 = lm.add %6, %7 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %2, %5, %8 : tensor<2x12xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Tests that an attention_grad whose forward attention (same operands and
// attributes) comes first in the function becomes attention_grad_stats reading
// the output and row logsumexp of an attention_stats that replaces the forward.
// CHECK-LABEL: func.func @attention_grad_reads_stats
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x8x16xf32>, %[[K:[^:]*]]: tensor<2x8x16xf32>, %[[V:[^:]*]]: tensor<2x8x16xf32>, %[[DY:[^:]*]]: tensor<2x8x16xf32>)
// CHECK-NEXT: %[[Y:.*]], %[[LSE:.*]] = lm.attention_stats %[[Q]], %[[K]], %[[V]] {causal = true, num_heads = 2 : i64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x2x8xf32>)
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = lm.attention_grad_stats %[[Q]], %[[K]], %[[V]], %[[Y]], %[[LSE]], %[[DY]] {causal = true, num_heads = 2 : i64}
// CHECK-NOT: lm.attention_grad %
// CHECK: return %[[Y]],
func.func @attention_grad_reads_stats(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>, %dy: tensor<2x8x16xf32>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %y = lm.attention %q, %k, %v {causal = true, num_heads = 2 : i64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %dq, %dk, %dv = lm.attention_grad %q, %k, %v, %dy {causal = true, num_heads = 2 : i64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return %y, %dq, %dk, %dv : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// -----

// Tests that an attention_grad without its forward in the function (or with a
// forward of other attributes) keeps recomputing: nothing changes.
// CHECK-LABEL: func.func @attention_grad_without_forward
// CHECK-NOT: lm.attention_stats
// CHECK: lm.attention %{{.*}} {num_heads = 2 : i64}
// CHECK-NOT: lm.attention_stats
// CHECK: lm.attention_grad %
func.func @attention_grad_without_forward(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>, %dy: tensor<2x8x16xf32>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %y = lm.attention %q, %k, %v {causal = false, num_heads = 2 : i64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %dq, %dk, %dv = lm.attention_grad %q, %k, %v, %dy {causal = true, num_heads = 2 : i64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return %y, %dq, %dk, %dv : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// -----

// Tests that a table gradient added to embedding_grad (either operand order)
// becomes embedding_grad_add scattering the rows into it, and that an
// embedding_grad with another use, or an add that broadcasts, stays.
// CHECK-LABEL: func.func @embedding_grad_added
// CHECK-SAME: (%[[W:[^:]*]]: tensor<16x8xf32>, %[[IDS:[^:]*]]: tensor<2x4xi32>, %[[DY:[^:]*]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[A:.*]] = lm.embedding_grad_add %[[W]], %[[IDS]], %[[DY]] : (tensor<16x8xf32>, tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
// CHECK-NEXT: %[[B:.*]] = lm.embedding_grad_add %[[W]], %[[IDS]], %[[DY]]
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @embedding_grad_added(%w: tensor<16x8xf32>, %ids: tensor<2x4xi32>, %dy: tensor<2x4x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %0 = lm.embedding_grad %ids, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  %1 = lm.add %w, %0 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %2 = lm.embedding_grad %ids, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  %3 = lm.add %2, %w : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %1, %3 : tensor<16x8xf32>, tensor<16x8xf32>
}

// CHECK-LABEL: func.func @embedding_grad_kept
// CHECK-NEXT: %[[E:.*]] = lm.embedding_grad
// CHECK-NEXT: lm.add %{{.*}}, %[[E]]
// CHECK-NEXT: %[[F:.*]] = lm.embedding_grad
// CHECK-NEXT: lm.add %[[F]], %{{.*}} : (tensor<16x8xf32>, tensor<8xf32>)
func.func @embedding_grad_kept(%w: tensor<16x8xf32>, %b: tensor<8xf32>, %ids: tensor<2x4xi32>, %dy: tensor<2x4x8xf32>)
    -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
  %0 = lm.embedding_grad %ids, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  %1 = lm.add %w, %0 : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %2 = lm.embedding_grad %ids, %dy : (tensor<2x4xi32>, tensor<2x4x8xf32>) -> tensor<16x8xf32>
  %3 = lm.add %2, %b : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<16x8xf32>
  return %0, %1, %3 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// Tests that a cross_entropy and the cross_entropy_grad of the same operands,
// with the seed defined before the forward, become one cross_entropy_with_grad
// at the forward's place; a seed computed after the forward (from the loss)
// keeps the pair.
// CHECK-LABEL: func.func @cross_entropy_with_grad
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x4x16xf32>, %[[T:[^:]*]]: tensor<2x4xi32>, %[[S:[^:]*]]: tensor<f32>)
// CHECK-NEXT: %[[DX:.*]], %[[L:.*]] = lm.cross_entropy_with_grad %[[X]], %[[T]], %[[S]] {ignore_index = -1 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> (tensor<2x4x16xf32>, tensor<f32>)
// CHECK-NEXT: return %[[L]], %[[DX]]
func.func @cross_entropy_with_grad(%x: tensor<2x4x16xf32>, %t: tensor<2x4xi32>, %s: tensor<f32>) -> (tensor<f32>, tensor<2x4x16xf32>) {
  %l = lm.cross_entropy %x, %t {ignore_index = -1 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %dx = lm.cross_entropy_grad %x, %t, %s {ignore_index = -1 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  return %l, %dx : tensor<f32>, tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @cross_entropy_grad_kept
// CHECK: lm.cross_entropy %
// CHECK: lm.cross_entropy_grad %
// CHECK: lm.cross_entropy %
// CHECK: lm.cross_entropy_grad %
func.func @cross_entropy_grad_kept(%x: tensor<2x4x16xf32>, %t: tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
  %l = lm.cross_entropy %x, %t : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %s = lm.mul %l, %l : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %dx = lm.cross_entropy_grad %x, %t, %s : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  // Another ignore_index: not the same loss.
  %l2 = lm.cross_entropy %x, %t : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %dx2 = lm.cross_entropy_grad %x, %t, %l {ignore_index = 3 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> tensor<2x4x16xf32>
  %sum = lm.add %s, %l2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %sum, %dx, %dx2 : tensor<f32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>
}

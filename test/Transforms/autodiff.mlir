// RUN: lm-opt %s -split-input-file -verify-diagnostics -lm-autodiff | FileCheck %s
// RUN: lm-opt %s -split-input-file -verify-diagnostics -lm-autodiff | FileCheck %s --check-prefix=NOTRANSPOSE

// Tests that the train step keeps the arguments and their attributes, is
// marked lm.train_step, returns the loss and then one gradient per lm.param
// argument in order (tagged lm.grad_of), and that a matmul's gradients are
// matmuls with transpose flags (no lm.transpose): dx = dy w^T, dw = x^T dy.
// The NOTRANSPOSE run checks that no lm.transpose appears anywhere in the
// train step, from its signature to its return.
// NOTRANSPOSE-LABEL: func.func @matmul_loss_train_step(
// NOTRANSPOSE-NOT: lm.transpose
// NOTRANSPOSE: return
// CHECK-LABEL: func.func @matmul_loss(
// CHECK-LABEL: func.func @matmul_loss_train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32> {lm.param = "x"}
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<8x3xf32> {lm.init = {kind = "zeros"}, lm.param = "w"}
// CHECK-SAME: -> (tensor<f32>, tensor<4x8xf32> {lm.grad_of = "x"}, tensor<8x3xf32> {lm.grad_of = "w"})
// CHECK-SAME: attributes {lm.train_step}
// CHECK: %[[Y:.*]] = lm.matmul %[[X]], %[[W]] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[L:.*]] = lm.sum_to %[[Y]] : (tensor<4x3xf32>) -> tensor<f32>
// CHECK: %[[SEED:.*]] = lm.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DY:.*]] = lm.add %{{.*}}, %[[SEED]] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
// CHECK: %[[DX:.*]] = lm.matmul %[[DY]], %[[W]] {transpose_rhs = true} : (tensor<4x3xf32>, tensor<8x3xf32>) -> tensor<4x8xf32>
// CHECK: %[[DW:.*]] = lm.matmul %[[X]], %[[DY]] {transpose_lhs = true} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
// CHECK: return %[[L]], %[[DX]], %[[DW]]
func.func @matmul_loss(%x: tensor<4x8xf32> {lm.param = "x"},
                       %w: tensor<8x3xf32> {lm.param = "w", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %0 = lm.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = lm.sum_to %0 : (tensor<4x3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Tests that transposed matmul operands get their gradients with the flags
// folded in: for y = x^T w^T, dx = w^T dy^T and dw = dy^T x^T.
// CHECK-LABEL: func.func @matmul_tt_train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x4xf64>
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x8xf64>
// CHECK-DAG: lm.matmul %[[W]], %[[DY:[^ ]+]] {transpose_lhs = true, transpose_rhs = true} : (tensor<3x8xf64>, tensor<4x3xf64>) -> tensor<8x4xf64>
// CHECK-DAG: lm.matmul %[[DY]], %[[X]] {transpose_lhs = true, transpose_rhs = true} : (tensor<4x3xf64>, tensor<8x4xf64>) -> tensor<3x8xf64>
func.func @matmul_tt(%x: tensor<8x4xf64> {lm.param = "x"}, %w: tensor<3x8xf64> {lm.param = "w"}) -> tensor<f64>
    attributes {lm.objective} {
  %0 = lm.matmul %x, %w {transpose_lhs = true, transpose_rhs = true} : (tensor<8x4xf64>, tensor<3x8xf64>) -> tensor<4x3xf64>
  %1 = lm.sum_to %0 : (tensor<4x3xf64>) -> tensor<f64>
  return %1 : tensor<f64>
}

// -----

// Tests that a rank-2 weight shared by a batched lhs gets one gradient: lhs
// and dy are flattened to 2-D and contracted by a single transposed matmul.
// CHECK-LABEL: func.func @shared_rhs_train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32>
// CHECK-DAG: %[[X2:.*]] = lm.reshape %[[X]] : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
// CHECK-DAG: %[[DY2:.*]] = lm.reshape %{{.*}} : (tensor<2x4x3xf32>) -> tensor<8x3xf32>
// CHECK: %[[DW:.*]] = lm.matmul %[[X2]], %[[DY2]] {transpose_lhs = true} : (tensor<8x8xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
// CHECK: return %{{.*}}, %[[DW]]
func.func @shared_rhs(%x: tensor<2x4x8xf32> {lm.input = "x"}, %w: tensor<8x3xf32> {lm.param = "w"}) -> tensor<f32>
    attributes {lm.objective} {
  %0 = lm.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
  %1 = lm.sum_to %0 : (tensor<2x4x3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Tests that a broadcast bias gets its gradient summed with lm.sum_to, and
// that the data input (not a parameter) gets no gradient.
// CHECK-LABEL: func.func @bias_train_step(
// CHECK-SAME: %[[H:[a-z0-9]+]]: tensor<4x3xf32> {lm.input = "h"}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<3xf32> {lm.param = "b"}
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {lm.grad_of = "b"})
// CHECK: lm.add %[[H]], %[[B]]
// CHECK: lm.sum_to %{{.*}} : (tensor<4x3xf32>) -> tensor<f32>
// CHECK: %[[DY:.*]] = lm.mul %{{.*}} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[DB:.*]] = lm.sum_to %[[DY]] : (tensor<4x3xf32>) -> tensor<3xf32>
// CHECK-NEXT: return %{{.*}}, %[[DB]] : tensor<f32>, tensor<3xf32>
func.func @bias(%h: tensor<4x3xf32> {lm.input = "h"}, %b: tensor<3xf32> {lm.param = "b"}) -> tensor<f32>
    attributes {lm.objective} {
  %c = lm.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.5, 2.5, 3.5]]> : tensor<4x3xf32>
  %0 = lm.add %h, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %1 = lm.mul %0, %c : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = lm.sum_to %1 : (tensor<4x3xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Tests that a parameter used twice (tied embeddings: the lookup table is
// also the output projection) gets the sum of both contributions, and that
// the integer ids get no gradient.
// CHECK-LABEL: func.func @tied_train_step(
// CHECK-SAME: %[[WTE:[a-z0-9]+]]: tensor<16x8xf32> {lm.param = "wte"}
// CHECK-SAME: %[[IDS:[a-z0-9]+]]: tensor<2x5xi32> {lm.input = "tokens", lm.vocab = 16 : i64}
// CHECK: %[[DL:.*]] = lm.cross_entropy_grad %{{.*}}, %[[IDS]], %{{.*}} : (tensor<2x5x16xf32>, tensor<2x5xi32>, tensor<f32>) -> tensor<2x5x16xf32>
// CHECK-DAG: %[[G1:.*]] = lm.matmul %[[DL]], %[[WTE]] : (tensor<2x5x16xf32>, tensor<16x8xf32>) -> tensor<2x5x8xf32>
// CHECK-DAG: %[[G2:.*]] = lm.matmul %[[DLF:.*]], %[[HF:.*]] {transpose_lhs = true} : (tensor<10x16xf32>, tensor<10x8xf32>) -> tensor<16x8xf32>
// CHECK: %[[G3:.*]] = lm.embedding_grad %[[IDS]], %[[G1]] : (tensor<2x5xi32>, tensor<2x5x8xf32>) -> tensor<16x8xf32>
// CHECK: %[[SUM:.*]] = lm.add %[[G2]], %[[G3]] : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
// CHECK: return %{{.*}}, %[[SUM]] : tensor<f32>, tensor<16x8xf32>
func.func @tied(%wte: tensor<16x8xf32> {lm.param = "wte"},
                %ids: tensor<2x5xi32> {lm.input = "tokens", lm.vocab = 16 : i64}) -> tensor<f32>
    attributes {lm.objective} {
  %h = lm.embedding %wte, %ids : (tensor<16x8xf32>, tensor<2x5xi32>) -> tensor<2x5x8xf32>
  %logits = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<2x5x8xf32>, tensor<16x8xf32>) -> tensor<2x5x16xf32>
  %loss = lm.cross_entropy %logits, %ids : (tensor<2x5x16xf32>, tensor<2x5xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tests that a parameter that does not influence the loss gets a zeros
// gradient (an lm.fill, not a splat constant the plan would hold byte for
// byte), and one used only off the loss path gets no backward ops.
// CHECK-LABEL: func.func @unused_train_step(
// CHECK-NOT: lm.gelu_grad
// CHECK-DAG: %[[Z1:.*]] = lm.fill 0.000000e+00 : tensor<2x2xf32>
// CHECK-DAG: %[[Z2:.*]] = lm.fill 0.000000e+00 : tensor<7xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[Z1]], %[[Z2]] : tensor<f32>, tensor<3xf32>, tensor<2x2xf32>, tensor<7xf32>
func.func @unused(%a: tensor<3xf32> {lm.param = "a"}, %u: tensor<2x2xf32> {lm.param = "u"},
                  %v: tensor<7xf32> {lm.param = "v"}) -> tensor<f32>
    attributes {lm.objective} {
  %dead = lm.gelu %v : (tensor<7xf32>) -> tensor<7xf32>
  %0 = lm.neg %a : (tensor<3xf32>) -> tensor<3xf32>
  %1 = lm.sum_to %0 : (tensor<3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Tests that transpose, reshape and slice send the gradient back with the
// inverse permutation, the inverse reshape and slice_grad.
// CHECK-LABEL: func.func @data_movement_train_step(
// CHECK: %[[DS:.*]] = lm.slice_grad %{{.*}} {limit = array<i64: 4, 6>, start = array<i64: 0, 1>, stride = array<i64: 2, 2>} : (tensor<2x3xf32>) -> tensor<4x6xf32>
// CHECK: %[[DR:.*]] = lm.reshape %[[DS]] : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
// CHECK: %[[DT:.*]] = lm.transpose %[[DR]] {permutation = array<i64: 2, 0, 1>} : (tensor<4x2x3xf32>) -> tensor<3x4x2xf32>
// CHECK: return %{{.*}}, %[[DT]]
func.func @data_movement(%x: tensor<3x4x2xf32> {lm.param = "x"}) -> tensor<f32> attributes {lm.objective} {
  %0 = lm.transpose %x {permutation = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %1 = lm.reshape %0 : (tensor<4x2x3xf32>) -> tensor<4x6xf32>
  %2 = lm.slice %1 {start = array<i64: 0, 1>, limit = array<i64: 4, 6>, stride = array<i64: 2, 2>} : (tensor<4x6xf32>) -> tensor<2x3xf32>
  %3 = lm.sum_to %2 : (tensor<2x3xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// Tests that the pass refuses an objective whose result is not a scalar.
// expected-error @below {{objective '@vector_loss' must return a scalar float loss (tensor<f32> or tensor<f64>), then only float scalars named by lm.metric, but returns ('tensor<3xf32>')}}
func.func @vector_loss(%a: tensor<3xf32> {lm.param = "a"}) -> tensor<3xf32> attributes {lm.objective} {
  %0 = lm.neg %a : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Tests that the pass refuses an integer loss.
// expected-error @below {{objective '@int_loss' must return a scalar float loss (tensor<f32> or tensor<f64>), then only float scalars named by lm.metric, but returns ('tensor<i32>')}}
func.func @int_loss(%a: tensor<i32> {lm.input = "a"}) -> tensor<i32> attributes {lm.objective} {
  return %a : tensor<i32>
}

// -----

// Tests that an op without a gradient rule on the loss path is an error that
// names the op.
func.func private @opaque(tensor<3xf32>) -> tensor<3xf32>
func.func @no_rule(%a: tensor<3xf32> {lm.param = "a"}) -> tensor<f32> attributes {lm.objective} {
  // expected-error @below {{cannot differentiate 'func.call': it has no gradient rule (GradientOpInterface)}}
  %0 = func.call @opaque(%a) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = lm.sum_to %0 : (tensor<3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Tests that an existing function of the train step's name is not clobbered.
func.func @taken_train_step() {
  return
}
// expected-error @below {{cannot add the train step '@taken_train_step': a symbol of that name already exists}}
func.func @taken(%a: tensor<f32> {lm.param = "a"}) -> tensor<f32> attributes {lm.objective} {
  return %a : tensor<f32>
}

// -----

// Tests that a shared rhs whose contracted dim is empty (K = 0) still gets its
// gradient: flattening the lhs to 2-D must not divide by K.
// CHECK-LABEL: func.func @shared_rhs_empty_k_train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x0xf32>
// CHECK-DAG: %[[X2:.*]] = lm.reshape %[[X]] : (tensor<2x4x0xf32>) -> tensor<8x0xf32>
// CHECK-DAG: %[[DY2:.*]] = lm.reshape %{{.*}} : (tensor<2x4x3xf32>) -> tensor<8x3xf32>
// CHECK: %[[DW:.*]] = lm.matmul %[[X2]], %[[DY2]] {transpose_lhs = true} : (tensor<8x0xf32>, tensor<8x3xf32>) -> tensor<0x3xf32>
// CHECK: return %{{.*}}, %[[DW]]
func.func @shared_rhs_empty_k(%x: tensor<2x4x0xf32> {lm.input = "x"}, %w: tensor<0x3xf32> {lm.param = "w"}) -> tensor<f32>
    attributes {lm.objective} {
  %0 = lm.matmul %x, %w : (tensor<2x4x0xf32>, tensor<0x3xf32>) -> tensor<2x4x3xf32>
  %1 = lm.sum_to %0 : (tensor<2x4x3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Tests that an objective without a body is refused.
// expected-error @below {{objective '@declared' must have a body of a single block}}
func.func private @declared(%a: tensor<3xf32> {lm.param = "a"}) -> tensor<f32> attributes {lm.objective}

// -----

// Tests that a parameter name must be a string.
// expected-error @below {{argument #0 of '@int_name': lm.param must be a string (the parameter name), got 1 : i64}}
func.func @int_name(%a: tensor<f32> {lm.param = 1 : i64}) -> tensor<f32> attributes {lm.objective} {
  return %a : tensor<f32>
}

// -----

// Tests that a parameter that is not a tensor is refused (its gradient would
// be a tensor constant of a scalar type).
// expected-error @below {{argument #0 of '@scalar_param' (parameter "p") must be a statically shaped float tensor to be differentiated, got 'f32'}}
func.func @scalar_param(%p: f32 {lm.param = "p"}, %x: tensor<f32> {lm.input = "x"}) -> tensor<f32>
    attributes {lm.objective} {
  return %x : tensor<f32>
}

// -----

// Tests that a dynamically shaped parameter is refused.
// expected-error @below {{argument #1 of '@dynamic_param' (parameter "d") must be a statically shaped float tensor to be differentiated, got 'tensor<?x3xf32>'}}
func.func @dynamic_param(%x: tensor<f32> {lm.input = "x"}, %d: tensor<?x3xf32> {lm.param = "d"}) -> tensor<f32>
    attributes {lm.objective} {
  return %x : tensor<f32>
}

// -----

// Tests that an integer parameter is refused (it has no gradient).
// expected-error @below {{argument #0 of '@int_param' (parameter "n") must be a statically shaped float tensor to be differentiated, got 'tensor<3xi32>'}}
func.func @int_param(%n: tensor<3xi32> {lm.param = "n"}, %x: tensor<f32> {lm.input = "x"}) -> tensor<f32>
    attributes {lm.objective} {
  return %x : tensor<f32>
}

// -----

// Tests that a result after the loss must be a metric (a float scalar named by
// lm.metric).
// expected-error @below {{then only float scalars named by lm.metric, but returns ('tensor<f32>', 'tensor<f32>')}}
func.func @unnamed_extra(%a: tensor<f32> {lm.param = "a"}) -> (tensor<f32>, tensor<f32>) attributes {lm.objective} {
  %0 = lm.neg %a : (tensor<f32>) -> tensor<f32>
  return %0, %a : tensor<f32>, tensor<f32>
}

// -----

// Tests that metrics stay out of the train step: it returns the loss and the
// gradients only, and the metric's ops (no gradient flows through accuracy)
// are gone.
// CHECK-LABEL: func.func @with_metric_train_step
// CHECK-SAME: -> (tensor<f32>, tensor<2x3xf32> {lm.grad_of = "w"})
// CHECK-NOT: lm.accuracy
// CHECK: return
func.func @with_metric(%w: tensor<2x3xf32> {lm.param = "w"}, %t: tensor<2xi32> {lm.input = "t"})
    -> (tensor<f32>, tensor<f32> {lm.metric = "acc"}) attributes {lm.objective} {
  %0 = lm.cross_entropy %w, %t : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
  %1 = lm.accuracy %w, %t : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// -----

// Tests that lm.where_int, whose mask depends on a parameter, needs no gradient
// rule: its i32 result is never active, so the reverse sweep skips it, and the
// table's gradient comes from the embedding of the mixed ids alone.
// CHECK-LABEL: func.func @where_int_inactive_train_step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<16x8xf32> {lm.param = "w"}
// CHECK: %[[MIX:.*]] = lm.where_int
// CHECK-NOT: where
// CHECK: lm.embedding_grad %[[MIX]], %{{.*}} : (tensor<2x5xi32>, tensor<2x5x8xf32>) -> tensor<16x8xf32>
// CHECK-NOT: where
// CHECK: return
func.func @where_int_inactive(%w: tensor<16x8xf32> {lm.param = "w"}, %a: tensor<2x5xi32>, %b: tensor<2x5xi32>,
                              %x: tensor<2x5xf32>) -> tensor<f32>
    attributes {lm.objective} {
  %e = lm.embedding %w, %a : (tensor<16x8xf32>, tensor<2x5xi32>) -> tensor<2x5x8xf32>
  %s = lm.sum_to %e : (tensor<2x5x8xf32>) -> tensor<2x5x1xf32>
  %r = lm.reshape %s : (tensor<2x5x1xf32>) -> tensor<2x5xf32>
  %m = lm.gt %r, %x : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %mix = lm.where_int %m, %a, %b : (tensor<2x5xf32>, tensor<2x5xi32>, tensor<2x5xi32>) -> tensor<2x5xi32>
  %h = lm.embedding %w, %mix : (tensor<16x8xf32>, tensor<2x5xi32>) -> tensor<2x5x8xf32>
  %l = lm.sum_to %h : (tensor<2x5x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

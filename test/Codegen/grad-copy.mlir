// Tests that a gradient result that cannot be written in place gets a "copy"
// step into its parameter's GRAD buffer: a value returned as the gradient of
// two parameters (the second one copies from the first one's GRAD buffer), a
// constant (an unused parameter's zero gradient), and a function argument;
// and that lmrt accepts the plan (the module follows the causal data
// convention: one i32[batch, seq + 1] token input).
// RUN: lmc compile %s --emit=plan-text -o %t.plan | FileCheck %s
// RUN: lmrt inspect --steps %t.plan | FileCheck %s --check-prefix=INSPECT

module attributes {lm.data = {batch = 2 : i64, seq = 2 : i64, transform = "causal", vocab = 3 : i64}} {
  func.func @obj(%e: tensor<3x3xf32> {lm.param = "e", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                 %a: tensor<3xf32> {lm.param = "a", lm.init = {kind = "zeros"}},
                 %b: tensor<3xf32> {lm.param = "b", lm.init = {kind = "ones"}},
                 %c: tensor<3xf32> {lm.param = "c", lm.init = {kind = "uniform", low = -1.0 : f64, high = 1.0 : f64}},
                 %d: tensor<3xf32> {lm.param = "d", lm.init = {kind = "zeros"}},
                 %tokens: tensor<2x3xi32> {lm.input = "tokens", lm.vocab = 3 : i64}) -> tensor<f32> attributes {lm.objective} {
    %ids = lm.slice %tokens {start = array<i64: 0, 0>, limit = array<i64: 2, 2>, stride = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<2x2xi32>
    %tgt = lm.slice %tokens {start = array<i64: 0, 1>, limit = array<i64: 2, 3>, stride = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<2x2xi32>
    %h = lm.embedding %e, %ids : (tensor<3x3xf32>, tensor<2x2xi32>) -> tensor<2x2x3xf32>
    %z = lm.add %h, %a : (tensor<2x2x3xf32>, tensor<3xf32>) -> tensor<2x2x3xf32>
    %l = lm.cross_entropy %z, %tgt : (tensor<2x2x3xf32>, tensor<2x2xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }

  func.func @obj_train_step(%e: tensor<3x3xf32> {lm.param = "e", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                            %a: tensor<3xf32> {lm.param = "a", lm.init = {kind = "zeros"}},
                            %b: tensor<3xf32> {lm.param = "b", lm.init = {kind = "ones"}},
                            %c: tensor<3xf32> {lm.param = "c", lm.init = {kind = "uniform", low = -1.0 : f64, high = 1.0 : f64}},
                            %d: tensor<3xf32> {lm.param = "d", lm.init = {kind = "zeros"}},
                            %tokens: tensor<2x3xi32> {lm.input = "tokens", lm.vocab = 3 : i64})
      -> (tensor<f32>, tensor<3x3xf32> {lm.grad_of = "e"}, tensor<3xf32> {lm.grad_of = "a"},
          tensor<3xf32> {lm.grad_of = "b"}, tensor<3xf32> {lm.grad_of = "c"}, tensor<3xf32> {lm.grad_of = "d"}) attributes {lm.train_step} {
    %one = lm.constant dense<1.0> : tensor<f32>
    %zero = lm.constant dense<0.0> : tensor<3xf32>
    %ids = lm.slice %tokens {start = array<i64: 0, 0>, limit = array<i64: 2, 2>, stride = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<2x2xi32>
    %tgt = lm.slice %tokens {start = array<i64: 0, 1>, limit = array<i64: 2, 3>, stride = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<2x2xi32>
    %h = lm.embedding %e, %ids : (tensor<3x3xf32>, tensor<2x2xi32>) -> tensor<2x2x3xf32>
    %z = lm.add %h, %a : (tensor<2x2x3xf32>, tensor<3xf32>) -> tensor<2x2x3xf32>
    %l = lm.cross_entropy %z, %tgt : (tensor<2x2x3xf32>, tensor<2x2xi32>) -> tensor<f32>
    %dz = lm.cross_entropy_grad %z, %tgt, %one : (tensor<2x2x3xf32>, tensor<2x2xi32>, tensor<f32>) -> tensor<2x2x3xf32>
    %de = lm.embedding_grad %ids, %dz : (tensor<2x2xi32>, tensor<2x2x3xf32>) -> tensor<3x3xf32>
    %da = lm.sum_to %dz : (tensor<2x2x3xf32>) -> tensor<3xf32>
    // e and a: written in place; b: the same value as a's; c: a constant;
    // d: a function argument (the parameter itself).
    return %l, %de, %da, %da, %zero, %d : tensor<f32>, tensor<3x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
  }
}

// Buffers: 0-4 the parameters e a b c d, 5 tokens, 6-7 the constants 1 and
// 0 (first, as lmc's optimize stage puts constants), 8-12 ids tgt h z loss
// (cross_entropy_with_grad writes dz over z), 13-14 the in-place GRAD buffers
// of e and a, 15-17 the GRAD buffers the copies fill.
// CHECK-LABEL: name: "train_step"
// CHECK:      op: "cross_entropy_with_grad"
// CHECK-NEXT: inputs: [11, 9, 6]
// CHECK-NEXT: outputs: [11, 12]
// CHECK:      op: "embedding_grad"
// CHECK-NEXT: inputs: [8, 11]
// CHECK-NEXT: outputs: [13]
// CHECK:      op: "sum_to"
// CHECK-NEXT: inputs: [11]
// CHECK-NEXT: outputs: [14]
// CHECK:      op: "copy"
// CHECK-NEXT: inputs: [14]
// CHECK-NEXT: outputs: [15]
// CHECK-NEXT: loc: "{{.*}}grad-copy.mlir:[[@LINE-21]]:5"
// CHECK:      op: "copy"
// CHECK-NEXT: inputs: [7]
// CHECK-NEXT: outputs: [16]
// CHECK:      op: "copy"
// CHECK-NEXT: inputs: [4]
// CHECK-NEXT: outputs: [17]
// CHECK-NOT:  op: "copy"
// CHECK:      name: "grad:e"
// CHECK-NEXT: buffer: 13
// CHECK:      name: "grad:a"
// CHECK-NEXT: buffer: 14
// CHECK:      name: "grad:b"
// CHECK-NEXT: buffer: 15
// CHECK:      name: "grad:c"
// CHECK-NEXT: buffer: 16
// CHECK:      name: "grad:d"
// CHECK-NEXT: buffer: 17
// CHECK-LABEL: name: "eval"
// CHECK-NOT:  GRAD

// lmrt validates the plan (its copy kernel included) and sees the same steps.
// INSPECT: 7: copy (14) -> (15: f32[3])
// INSPECT: 8: copy (7) -> (16: f32[3])
// INSPECT: 9: copy (4) -> (17: f32[3])
// INSPECT: plan ok

// Tests that every op in the plan writer's kernel table (codegen/RuntimeOps.cpp)
// is one lmrt validates: an objective using the forward ops not exercised by
// gpt_tiny goes through -lm-autodiff (which adds their backward ops) and the
// resulting plan must pass `lmrt inspect`.
// RUN: lmc compile %s --fusion=none -o %t.plan --emit=plan-text | FileCheck %s
// RUN: lmrt inspect %t.plan | FileCheck %s --check-prefix=INSPECT

module attributes {lm.data = {batch = 2 : i64, seq = 4 : i64, transform = "causal", vocab = 8 : i64}} {
  func.func @ops(%table: tensor<8x8xf32> {lm.param = "table", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                 %s: tensor<8xf32> {lm.param = "s", lm.init = {kind = "ones"}},
                 %tokens: tensor<2x5xi32> {lm.input = "tokens", lm.vocab = 8 : i64}) -> tensor<f32> attributes {lm.objective} {
    %ids = lm.slice %tokens {start = array<i64: 0, 0>, limit = array<i64: 2, 4>, stride = array<i64: 1, 1>} : (tensor<2x5xi32>) -> tensor<2x4xi32>
    %tgt = lm.slice %tokens {start = array<i64: 0, 1>, limit = array<i64: 2, 5>, stride = array<i64: 1, 1>} : (tensor<2x5xi32>) -> tensor<2x4xi32>
    %h = lm.embedding %table, %ids : (tensor<8x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
    %p = lm.softmax %h : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %m = lm.mul %p, %s : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    // A reshape of a parameter stays a step (one of an arena value is a view).
    %s3 = lm.reshape %s : (tensor<8xf32>) -> tensor<1x1x8xf32>
    %d = lm.div %m, %s3 : (tensor<2x4x8xf32>, tensor<1x1x8xf32>) -> tensor<2x4x8xf32>
    %n = lm.neg %d : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %u = lm.sub %h, %n : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %r = lm.reshape %u : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
    %t = lm.transpose %r {permutation = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %b = lm.reshape %t : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %l = lm.cross_entropy %b, %tgt : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// CHECK-LABEL: name: "train_step"
// CHECK-DAG: op: "softmax"
// CHECK-DAG: op: "softmax_grad"
// CHECK-DAG: op: "mul"
// CHECK-DAG: op: "div"
// CHECK-DAG: op: "neg"
// CHECK-DAG: op: "sub"
// CHECK-DAG: op: "transpose"
// CHECK-DAG: op: "reshape"
// CHECK-DAG: op: "embedding_grad"
// CHECK-DAG: op: "cross_entropy_with_grad"
// CHECK-LABEL: name: "eval"

// INSPECT: plan ok

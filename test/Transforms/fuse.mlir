// RUN: lm-opt %s --lm-train-pipeline='fusion=none' -lm-fuse | FileCheck %s
// RUN: lm-opt %s --lm-train-pipeline='fusion=none' -lm-fuse -lm-fuse | FileCheck %s
// RUN: lm-opt %s --lm-train-pipeline='fusion=none' -lm-fuse | lm-opt | FileCheck %s --check-prefix=ROUNDTRIP

// Tests the fusion decisions for a pre-norm GPT MLP block with a residual and
// an output head, forward and backward (docs/fusion.md):
//  - forward: x @ w1 + b1 and its gelu form ONE matmul epilogue (in the train
//    step with two results: the pre-activation is kept for gelu_grad); the second GEMM's
//    bias and the residual add are its epilogue; layer norm, the head's GEMM
//    (nothing to fuse) and the loss stay library kernels;
//  - backward: gelu_grad and the b1 gradient (sum_to over the leading dims)
//    form one column-reduce kernel with two results; the b2 gradient alone is
//    the library's column sum; the residual's two gradient paths are summed
//    by a generated kernel;
//  - running the pass twice changes nothing (fusion ops are never regrouped),
//    and the fused IR round-trips through the printer and parser.

// CHECK-LABEL: func.func @block(
// CHECK:       lm.layer_norm
// CHECK:       %[[EPI:.*]] = lm.fusion
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.matmul
// CHECK-NEXT:    lm.add
// CHECK-NEXT:    lm.gelu
// CHECK-NEXT:    lm.yield
// CHECK:       lm.fusion %[[EPI]],
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.matmul
// CHECK-NEXT:    lm.add
// CHECK-NEXT:    lm.add
// CHECK-NEXT:    lm.yield
// CHECK:       lm.cross_entropy
// CHECK-NOT:   lm.fusion
// CHECK:       return

// CHECK-LABEL: func.func @block_train_step(
// CHECK:       %{{.*}}:2 = lm.fusion
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.matmul
// CHECK-NEXT:    lm.add
// CHECK-NEXT:    %[[G:.*]] = lm.gelu
// CHECK-NEXT:    lm.yield %{{.*}}, %[[G]]
// CHECK:       lm.cross_entropy_with_grad
// CHECK:       lm.sum_to
// The gelu backward and the b1 gradient: one kernel, two results.
// CHECK:       lm.fusion
// CHECK-SAME:  -> (tensor<2x4x32xf32>, tensor<32xf32>)
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.gelu_grad
// CHECK-NEXT:    lm.sum_to
// CHECK-NEXT:    lm.yield
// CHECK:       lm.layer_norm_grad
// The residual's two gradient paths, summed where they meet.
// CHECK-NEXT:  lm.fusion
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    lm.add
// CHECK-NEXT:    lm.yield
// CHECK:       return

// ROUNDTRIP: lm.fusion
// ROUNDTRIP: lm.yield

func.func @block(%ids: tensor<2x4xi32> {lm.input = "tokens", lm.vocab = 16 : i64},
                 %x: tensor<2x4x8xf32> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                 %g: tensor<8xf32> {lm.param = "ln.gamma", lm.init = {kind = "ones"}},
                 %b: tensor<8xf32> {lm.param = "ln.beta", lm.init = {kind = "zeros"}},
                 %w1: tensor<8x32xf32> {lm.param = "w1", lm.init = {kind = "normal", mean = 0.0 : f64, std = 0.02 : f64}},
                 %b1: tensor<32xf32> {lm.param = "b1", lm.init = {kind = "zeros"}},
                 %w2: tensor<32x8xf32> {lm.param = "w2", lm.init = {kind = "normal", mean = 0.0 : f64, std = 0.02 : f64}},
                 %b2: tensor<8xf32> {lm.param = "b2", lm.init = {kind = "zeros"}},
                 %wo: tensor<8x16xf32> {lm.param = "wo", lm.init = {kind = "normal", mean = 0.0 : f64, std = 0.02 : f64}})
    -> tensor<f32> attributes {lm.objective} {
  %h = lm.layer_norm %x, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %u = lm.matmul %h, %w1 : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %ub = lm.add %u, %b1 : (tensor<2x4x32xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %a = lm.gelu %ub : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %d = lm.matmul %a, %w2 : (tensor<2x4x32xf32>, tensor<32x8xf32>) -> tensor<2x4x8xf32>
  %db = lm.add %d, %b2 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %y = lm.add %x, %db : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = lm.matmul %y, %wo : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %loss = lm.cross_entropy %logits, %ids : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

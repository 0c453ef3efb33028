// Tests -lm-remat's decisions (through -test-print-remat) and its rewrite on a
// two-layer MLP whose ops carry the layer NameLocs the frontend gives each copy
// of a `repeat` (frontend/Builtins.cpp, tagLayer).
// RUN: lm-opt %s --lm-autodiff -canonicalize -cse --test-print-remat=policy=full -o /dev/null | FileCheck %s --check-prefix=FULL
// RUN: lm-opt %s --lm-autodiff -canonicalize -cse --test-print-remat=policy=selective -o /dev/null | FileCheck %s --check-prefix=SEL
// RUN: lm-opt %s --lm-autodiff -canonicalize -cse --test-print-remat=policy=none -o /dev/null | FileCheck %s --check-prefix=NONE
// RUN: lm-opt %s --lm-autodiff -canonicalize -cse '--lm-remat=policy=full' | FileCheck %s --check-prefix=IR
// RUN: not lm-opt %s '--lm-remat=policy=bogus' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// full: the GEMM outputs gelu's gradient reads are recomputed from each
// layer's input; layer 0's output (layer 1's input, which layer 1's weight
// gradient reads) is kept.
// FULL: remat @f_train_step policy=full
// FULL-NEXT:   layer.0: lm.matmul: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.gelu: keep (layer output)
// FULL-NEXT:   layer.1: lm.matmul: recompute (read by the backward)
// FULL-NEXT:   layer.1: lm.gelu: forward only
// FULL-NEXT:   recompute 2 ops, keep 1

// selective never recomputes a GEMM.
// SEL: remat @f_train_step policy=selective
// SEL-NEXT:   layer.0: lm.matmul: keep (gemm)
// SEL-NEXT:   layer.0: lm.gelu: keep (layer output)
// SEL-NEXT:   layer.1: lm.matmul: keep (gemm)
// SEL-NEXT:   layer.1: lm.gelu: forward only
// SEL-NEXT:   recompute 0 ops, keep 3

// NONE: remat @f_train_step policy=none
// NONE-NEXT:   recompute 0 ops, keep 0

// The backward reads clones made right before their first backward use; the
// forward's matmuls feed only the forward.
// IR-LABEL: func.func @f_train_step
// IR:         %[[H0:.*]] = lm.matmul %arg0, %arg1
// IR-NEXT:    %[[A0:.*]] = lm.gelu %[[H0]]
// IR-NEXT:    %[[H1:.*]] = lm.matmul %[[A0]], %arg2
// IR-NEXT:    %[[A1:.*]] = lm.gelu %[[H1]]
// IR:         %[[R1:.*]] = lm.matmul %[[A0]], %arg2
// IR-NEXT:    lm.gelu_grad %[[R1]]
// IR:         %[[R0:.*]] = lm.matmul %arg0, %arg1
// IR-NEXT:    lm.gelu_grad %[[R0]]
// IR-NOT:     lm.gelu_grad %[[H0]]

// BAD: unknown policy 'bogus' (expected none, full, selective or auto)

#l0 = loc("layer.0")
#l1 = loc("layer.1")
func.func @f(%x: tensor<4x8xf32> {lm.input = "x"},
             %w0: tensor<8x8xf32> {lm.param = "w0", lm.init = {kind = "zeros"}},
             %w1: tensor<8x8xf32> {lm.param = "w1", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %h0 = lm.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc(#l0)
  %a0 = lm.gelu %h0 : (tensor<4x8xf32>) -> tensor<4x8xf32> loc(#l0)
  %h1 = lm.matmul %a0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc(#l1)
  %a1 = lm.gelu %h1 : (tensor<4x8xf32>) -> tensor<4x8xf32> loc(#l1)
  %s = lm.sum_to %a1 : (tensor<4x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// Tests -lm-remat's policies on a pre-norm attention layer after the train
// pipeline (autodiff, canonicalize, cse, fusion): the attention pair becomes
// attention_stats + attention_grad_stats and the output projection a matmul
// epilogue region with the residual add.
// RUN: lm-opt %s --lm-train-pipeline --test-print-remat=policy=selective -o /dev/null | FileCheck %s --check-prefix=SEL
// RUN: lm-opt %s --lm-train-pipeline --test-print-remat=policy=full -o /dev/null | FileCheck %s --check-prefix=FULL
// RUN: lm-opt %s --lm-compile-pipeline='check-contract=false remat=selective' | FileCheck %s --check-prefix=IR

// selective (Megatron's): the attention core and the norm are recomputed from
// the kept GEMM output and layer input; GEMMs (matmuls, fused epilogues) keep.
// SEL: remat @f_train_step policy=selective
// SEL-NEXT:   layer.0: lm.layer_norm: recompute (read by the backward)
// SEL-NEXT:   layer.0: lm.matmul: keep (gemm)
// SEL-NEXT:   layer.0: lm.attention_stats: recompute (read by the backward)
// SEL-NEXT:   layer.0: lm.fusion (gemm): keep (gemm)
// SEL-NEXT:   recompute 2 ops, keep 2

// full: everything (the layer's input is an argument here); the fused output
// projection is recomputed for its second result, which the backward reads,
// while its first (the layer's output) is kept.
// FULL: remat @f_train_step policy=full
// FULL-NEXT:   layer.0: lm.layer_norm: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.matmul: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.attention_stats: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.fusion (gemm): recompute (read by the backward)
// FULL-NEXT:   recompute 4 ops, keep 0

// The recomputed attention reads the kept projection; the backward reads it.
// IR-LABEL: func.func @f_train_step
// IR:         %[[Q:.*]] = lm.matmul
// IR:         lm.attention_stats %[[Q]], %[[Q]], %[[Q]]
// IR:         %[[O:.*]], %[[LSE:.*]] = lm.attention_stats %[[Q]], %[[Q]], %[[Q]]
// IR-NEXT:    lm.reshape %[[O]]
// IR:         lm.attention_grad_stats %[[Q]], %[[Q]], %[[Q]], %[[O]], %[[LSE]]

#l0 = loc("layer.0")
func.func @f(%x: tensor<2x4x8xf32> {lm.input = "x"},
             %g: tensor<8xf32> {lm.param = "g", lm.init = {kind = "ones"}},
             %b: tensor<8xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
             %wq: tensor<8x8xf32> {lm.param = "wq", lm.init = {kind = "zeros"}},
             %wo: tensor<8x8xf32> {lm.param = "wo", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %n = lm.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %q = lm.matmul %n, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %a = lm.attention %q, %q, %q {causal = true, num_heads = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %o = lm.matmul %a, %wo : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %y = lm.add %x, %o : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %c = lm.constant dense<0.5> : tensor<2x4x8xf32>
  %p = lm.mul %y, %y : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s = lm.sum_to %p : (tensor<2x4x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

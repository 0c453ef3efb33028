// RUN: not lm-opt %s -split-input-file -lm-autodiff '-lm-data-parallel=zero=1' '-lm-zero-shard-params=zero=3' 2>&1 | FileCheck %s

// Tests the errors of -lm-zero-shard-params. A gradient -lm-data-parallel already
// all-reduced (below stage 2) would be averaged twice:
// CHECK: error: -lm-zero-shard-params: the gradient of 'w' is already all-reduced; run -lm-data-parallel with zero = 3 first
module attributes {lm.mesh = {data = 2 : i64, tensor = 1 : i64, global_batch = 8 : i64}} {
  func.func @loss(%w: tensor<2xf32> {lm.param = "w", lm.init = {kind = "zeros"}}) -> tensor<f32>
      attributes {lm.objective} {
    %q = lm.mul %w, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %l = lm.sum_to %q : (tensor<2xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A parameter already sliced (a module the pass has rewritten):
// CHECK: error: -lm-zero-shard-params: parameter 'w' is already sliced (ZeRO stage 3)
module attributes {lm.mesh = {data = 2 : i64, tensor = 1 : i64, global_batch = 8 : i64}} {
  func.func @plain(%w: tensor<1xf32> {lm.param = "w", lm.init = {kind = "zeros"}, lm.zero_logical = tensor<2xf32>}) -> tensor<f32>
      attributes {lm.objective} {
    %q = lm.mul %w, %w : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %l = lm.sum_to %q : (tensor<1xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

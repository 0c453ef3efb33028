// RUN: lm-opt %s -split-input-file -verify-diagnostics '-lm-spmd=tensor=4' > /dev/null

// Tests -lm-spmd's errors (docs/distributed.md): a dimension the tensor axis does
// not divide names the tensor and the axis.


// An MLP hidden size the tensor axis does not divide (6 over 4 ranks) is an
// error naming the parameter and the axis.
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  // expected-error@below {{tensor parallelism: parameter 'w1' tensor<8x6xf32>: dimension 1 (6) is not divisible by mesh axis 'tensor' (4 ranks); choose a size that is a multiple of 4 (or another mesh)}}
  func.func @mlp(%w1: tensor<8x6xf32> {lm.param = "w1", lm.init = {kind = "zeros"}},
                 %w2: tensor<6x8xf32> {lm.param = "w2", lm.init = {kind = "zeros"}},
                 %x: tensor<2x8xf32> {lm.input = "x"}) -> tensor<2x8xf32> {
    %h = lm.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x6xf32>) -> tensor<2x6xf32>
    %a = lm.relu %h : (tensor<2x6xf32>) -> tensor<2x6xf32>
    %y = lm.matmul %a, %w2 : (tensor<2x6xf32>, tensor<6x8xf32>) -> tensor<2x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// Attention with fewer heads than ranks: an error naming the op, its operand and
// the axis.
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @attn(%wq: tensor<8x8xf32> {lm.param = "wq", lm.init = {kind = "zeros"}},
                  %wo: tensor<8x8xf32> {lm.param = "wo", lm.init = {kind = "zeros"}},
                  %x: tensor<1x4x8xf32> {lm.input = "x"}) -> tensor<1x4x8xf32> {
    %q = lm.matmul %x, %wq : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
    // expected-error@below {{tensor parallelism: lm.attention splits the result of lm.matmul tensor<1x4x8xf32> by heads: dimension 2 holds 2 heads of 4, which mesh axis 'tensor' (4 ranks) does not divide; choose a number of heads that is a multiple of 4 (or another mesh)}}
    %y = lm.attention %q, %q, %q {num_heads = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
    %o = lm.matmul %y, %wo : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
    return %o : tensor<1x4x8xf32>
  }
}

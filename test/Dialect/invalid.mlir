// RUN: lm-opt %s -split-input-file -verify-diagnostics

// Tests that the constant's payload type must be its result type.
func.func @constant_type(%x: tensor<2xf32>) {
  // expected-error @below {{'lm.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "lm.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

// Tests that element types outside f32/f64/i32 are rejected by the operand constraints.
func.func @f16(%x: tensor<4xf16>) {
  // expected-error @below {{operand #0 must be statically shaped tensor of 32-bit float or 64-bit float values}}
  %0 = lm.neg %x : (tensor<4xf16>) -> tensor<4xf16>
  return
}

// -----

// Tests that dynamic shapes are rejected.
func.func @dynamic(%x: tensor<?x4xf32>) {
  // expected-error @below {{must be statically shaped tensor}}
  %0 = lm.neg %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

// Tests that an op never mixes f32 and f64 (the dialect-wide trait).
func.func @mixed_floats(%x: tensor<4xf32>, %y: tensor<4xf64>) {
  // expected-error @below {{'lm.add' op mixes float element types 'f32' and 'f64'}}
  %0 = lm.add %x, %y : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return
}

// -----

// Tests that embedding ids must be i32.
func.func @embedding_ids(%t: tensor<10x4xf32>, %ids: tensor<3xf32>) {
  // expected-error @below {{operand #1 must be statically shaped tensor of 32-bit signless integer values}}
  %0 = lm.embedding %t, %ids : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

// Tests that the embedding table must be rank 2.
func.func @embedding_table(%t: tensor<10xf32>, %ids: tensor<3xi32>) {
  // expected-error @below {{table [10] must have rank 2 [V, D]}}
  %0 = lm.embedding %t, %ids : (tensor<10xf32>, tensor<3xi32>) -> tensor<3x4xf32>
  return
}

// -----

// Tests that the embedding result shape is checked.
func.func @embedding_result(%t: tensor<10x4xf32>, %ids: tensor<3xi32>) {
  // expected-error @below {{result type 'tensor<3x5xf32>' does not match the expected shape [3, 4]}}
  %0 = lm.embedding %t, %ids : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x5xf32>
  return
}

// -----

// Tests that matmul's contracted dimensions must agree (with the transpose flags).
func.func @matmul_k(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @below {{contracted dimensions differ: lhs [4, 8] has K = 8, rhs [4, 8] has K = 4}}
  %0 = lm.matmul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that matmul batch dimensions must agree.
func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @below {{batch dimensions differ}}
  %0 = lm.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// Tests that the matmul result shape is checked.
func.func @matmul_result(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @below {{result type 'tensor<4x8xf32>' does not match the expected shape [4, 4]}}
  %0 = lm.matmul %a, %b {transpose_rhs = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that binary ops check NumPy broadcasting.
func.func @broadcast(%a: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @below {{'lm.sub' op shapes [4, 8] and [4] do not broadcast: dimension 8 vs 4 at position -1 from the end}}
  %0 = lm.sub %a, %b : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that the broadcast result shape is checked.
func.func @broadcast_result(%a: tensor<4x1xf32>, %b: tensor<8xf32>) {
  // expected-error @below {{'lm.mul' op result type 'tensor<4x1xf32>' does not match the expected shape [4, 8]}}
  %0 = lm.mul %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Tests that lm.div checks broadcasting.
func.func @div(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @below {{'lm.div' op shapes [4] and [3] do not broadcast}}
  %0 = lm.div %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that lm.add checks broadcasting.
func.func @add(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @below {{'lm.add' op shapes [4] and [3] do not broadcast}}
  %0 = lm.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that unary ops keep the shape.
func.func @neg(%a: tensor<4xf32>) {
  // expected-error @below {{'lm.neg' op result type 'tensor<5xf32>' does not match the expected shape [4]}}
  %0 = lm.neg %a : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

// Tests that lm.gelu keeps the shape.
func.func @gelu(%a: tensor<4xf32>) {
  // expected-error @below {{'lm.gelu' op result type 'tensor<2x2xf32>' does not match the expected shape [4]}}
  %0 = lm.gelu %a : (tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

// Tests that lm.softplus keeps the shape.
func.func @softplus(%a: tensor<4xf32>) {
  // expected-error @below {{'lm.softplus' op result type 'tensor<5xf32>' does not match the expected shape [4]}}
  %0 = lm.softplus %a : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

// Tests that softmax needs a last dimension.
func.func @softmax_rank(%a: tensor<f32>) {
  // expected-error @below {{'lm.softmax' op operand must have rank >= 1}}
  %0 = lm.softmax %a : (tensor<f32>) -> tensor<f32>
  return
}

// -----

// Tests that layer_norm's gamma must be [D].
func.func @layer_norm_gamma(%x: tensor<4x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @below {{gamma [4] must be [8] (the last dim of x [4, 8])}}
  %0 = lm.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that dropout's rate must be below 1 (p = 1 would scale by 1/0).
func.func @dropout_rate(%x: tensor<4x8xf32>, %key: tensor<4x2xi32>) {
  // expected-error @below {{'lm.dropout' op the dropout rate p must be in [0, 1), got 1}}
  %0 = lm.dropout %x, %key {p = 1.0 : f64} : (tensor<4x8xf32>, tensor<4x2xi32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that dropout's site (its stream of the row's key) is not negative.
func.func @dropout_site(%x: tensor<4x8xf32>, %key: tensor<4x2xi32>) {
  // expected-error @below {{'lm.dropout' op site must be >= 0, got -1}}
  %0 = lm.dropout %x, %key {p = 0.1 : f64, site = -1 : i64} : (tensor<4x8xf32>, tensor<4x2xi32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that dropout's key holds two words for each row of x.
func.func @dropout_key_rows(%x: tensor<4x8xf32>, %key: tensor<3x2xi32>) {
  // expected-error @below {{'lm.dropout' op key [3, 2] must be [4, 2]}}
  %0 = lm.dropout %x, %key {p = 0.1 : f64} : (tensor<4x8xf32>, tensor<3x2xi32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that layer_norm's epsilon must be positive.
func.func @layer_norm_eps(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'lm.layer_norm' op epsilon must be finite and > 0, got 0}}
  %0 = lm.layer_norm %x, %g, %g {epsilon = 0.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that layer_norm's epsilon must not be NaN (which fails `<= 0` too).
func.func @layer_norm_eps_nan(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'lm.layer_norm' op epsilon must be finite and > 0, got nan}}
  %0 = lm.layer_norm %x, %g, %g {epsilon = 0x7FF8000000000000 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that layer_norm_grad's epsilon must be positive.
func.func @layer_norm_grad_eps(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'lm.layer_norm_grad' op epsilon must be finite and > 0, got 0}}
  %0:3 = lm.layer_norm_grad %x, %g, %x {epsilon = 0.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that layer_norm_grad's epsilon must not be NaN.
func.func @layer_norm_grad_eps_nan(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'lm.layer_norm_grad' op epsilon must be finite and > 0, got nan}}
  %0:3 = lm.layer_norm_grad %x, %g, %x {epsilon = 0x7FF8000000000000 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that attention's width must divide into the heads.
func.func @attention_heads(%q: tensor<2x8x30xf32>) {
  // expected-error @below {{last dim of q [2, 8, 30] (30) is not divisible by num_heads = 4}}
  %0 = lm.attention %q, %q, %q {num_heads = 4 : i64} : (tensor<2x8x30xf32>, tensor<2x8x30xf32>, tensor<2x8x30xf32>) -> tensor<2x8x30xf32>
  return
}

// -----

// Tests that attention's k must have q's batch and head size.
func.func @attention_k(%q: tensor<2x8x32xf32>, %k: tensor<3x4x32xf32>) {
  // expected-error @below {{k [3, 4, 32] must be [2, 4, 32] (4 key/value heads of q [2, 8, 32], any number of keys)}}
  %0 = lm.attention %q, %k, %k {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<3x4x32xf32>, tensor<3x4x32xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that a packed qkv's width must divide into q's heads and k's and v's.
func.func @packed_attention_width(%qkv: tensor<2x8x100xf32>) {
  // expected-error @below {{'lm.packed_attention' op last dim of qkv [2, 8, 100] (100) is not divisible by num_heads + 2 * num_kv_heads = 8}}
  %0 = lm.packed_attention %qkv {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x100xf32>) -> tensor<2x8x50xf32>
  return
}

// -----

// Tests that packed_attention_grad_stats's lse must be [B, H, T].
func.func @packed_attention_lse(%qkv: tensor<2x8x96xf32>, %y: tensor<2x8x32xf32>, %lse: tensor<2x8x4xf32>) {
  // expected-error @below {{'lm.packed_attention_grad_stats' op lse type 'tensor<2x8x4xf32>' does not match the expected shape [2, 4, 8]}}
  %0 = lm.packed_attention_grad_stats %qkv, %y, %lse, %y {num_heads = 4 : i64} : (tensor<2x8x96xf32>, tensor<2x8x32xf32>, tensor<2x8x4xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
  return
}

// -----

// Tests that causal attention needs as many keys as queries.
func.func @attention_causal_cross(%q: tensor<2x8x32xf32>, %k: tensor<2x4x32xf32>) {
  // expected-error @below {{'lm.attention' op causal attention needs as many keys as queries, got k [2, 4, 32] for q [2, 8, 32] (cross-attention is not causal)}}
  %0 = lm.attention %q, %k, %k {causal = true, num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x4x32xf32>, tensor<2x4x32xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that masked_attention's mask is [B, Tk].
func.func @masked_attention_mask_shape(%q: tensor<2x8x32xf32>, %k: tensor<2x4x32xf32>, %m: tensor<2x8xf32>) {
  // expected-error @below {{'lm.masked_attention' op mask [2, 8] must be [2, 4] [B, Tk] (1 on keys to attend, 0 on padding)}}
  %0 = lm.masked_attention %q, %k, %k, %m {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x4x32xf32>, tensor<2x4x32xf32>, tensor<2x8xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that masked_attention's mask has q's element type.
func.func @masked_attention_mask_type(%q: tensor<2x8x32xf32>, %m: tensor<2x8xf64>) {
  // expected-error @below {{'lm.masked_attention' op mixes float element types 'f32' and 'f64'}}
  %0 = lm.masked_attention %q, %q, %q, %m {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8xf64>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that biased_attention's bias broadcasts to [B, H, Tq, Tk].
func.func @biased_attention_bias_shape(%q: tensor<2x8x32xf32>, %b: tensor<1x3x8x8xf32>, %m: tensor<f32>, %s: tensor<i32>) {
  // expected-error @below {{'lm.biased_attention' op bias [1, 3, 8, 8] does not broadcast to [2, 4, 8, 8] [B, H, Tq, Tk]: dimension 3 vs 4 at position -3 from the end}}
  %0 = lm.biased_attention %q, %q, %q, %m, %b, %s, %s {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<1x3x8x8xf32>, tensor<i32>, tensor<i32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that biased_attention's bias has q's element type (the check of every lm op).
func.func @biased_attention_bias_type(%q: tensor<2x8x32xf32>, %b: tensor<1x4x8x8xf64>, %m: tensor<f32>, %s: tensor<i32>) {
  // expected-error @below {{'lm.biased_attention' op mixes float element types 'f32' and 'f64'}}
  %0 = lm.biased_attention %q, %q, %q, %m, %b, %s, %s {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<1x4x8x8xf64>, tensor<i32>, tensor<i32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that biased_attention's segments are [B, T] of self-attention.
func.func @biased_attention_segments_cross(%q: tensor<2x8x32xf32>, %k: tensor<2x4x32xf32>, %b: tensor<f32>, %s: tensor<2x8xi32>, %n: tensor<i32>) {
  // expected-error @below {{'lm.biased_attention' op segments need self-attention (keys use the queries' ids), got k [2, 4, 32] for q [2, 8, 32]}}
  %0 = lm.biased_attention %q, %k, %k, %b, %b, %s, %n {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x4x32xf32>, tensor<2x4x32xf32>, tensor<f32>, tensor<f32>, tensor<2x8xi32>, tensor<i32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that biased_attention's scale is >= 0 (0: 1/sqrt(Dh)).
func.func @biased_attention_scale(%q: tensor<2x8x32xf32>, %b: tensor<f32>, %s: tensor<i32>) {
  // expected-error @below {{'lm.biased_attention' op scale must be finite and >= 0 (0 means 1/sqrt(head size)), got -1}}
  %0 = lm.biased_attention %q, %q, %q, %b, %b, %s, %s {num_heads = 4 : i64, scale = -1.0 : f64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<f32>, tensor<i32>, tensor<i32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that biased_attention_grad's dbias has the bias's shape.
func.func @biased_attention_grad_dbias(%q: tensor<2x8x32xf32>, %b: tensor<1x4x1x8xf32>, %m: tensor<f32>, %s: tensor<i32>) {
  // expected-error @below {{'lm.biased_attention_grad' op dbias type 'tensor<1x4x8x8xf32>' does not match the expected shape [1, 4, 1, 8]}}
  %0:4 = lm.biased_attention_grad %q, %q, %q, %m, %b, %s, %s, %q {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<1x4x1x8xf32>, tensor<i32>, tensor<i32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<1x4x8x8xf32>)
  return
}

// -----

// Tests that biased_attention's dropout needs the dropout_key input [B, 2].
func.func @biased_attention_dropout_key(%q: tensor<2x8x32xf32>, %b: tensor<f32>, %s: tensor<i32>) {
  // expected-error @below {{'lm.biased_attention' op dropout > 0 needs key [] to be [2, 2] (two i32 words a batch row: the dropout_key input)}}
  %0 = lm.biased_attention %q, %q, %q, %b, %b, %s, %s {num_heads = 4 : i64, dropout = 0.1 : f64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<f32>, tensor<i32>, tensor<i32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that biased_attention's dropout rate is in [0, 1).
func.func @biased_attention_dropout_rate(%q: tensor<2x8x32xf32>, %b: tensor<f32>, %s: tensor<i32>, %key: tensor<2x2xi32>) {
  // expected-error @below {{'lm.biased_attention' op the dropout rate p must be in [0, 1), got 1}}
  %0 = lm.biased_attention %q, %q, %q, %b, %b, %s, %key {num_heads = 4 : i64, dropout = 1.0 : f64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<f32>, tensor<i32>, tensor<2x2xi32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that biased_attention's dropout site is not negative.
func.func @biased_attention_dropout_site(%q: tensor<2x8x32xf32>, %b: tensor<f32>, %s: tensor<i32>, %key: tensor<2x2xi32>) {
  // expected-error @below {{'lm.biased_attention' op site must be >= 0, got -2}}
  %0 = lm.biased_attention %q, %q, %q, %b, %b, %s, %key {num_heads = 4 : i64, dropout = 0.1 : f64, site = -2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<f32>, tensor<i32>, tensor<2x2xi32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that masked_attention_grad checks the forward rule, the mask's included.
func.func @masked_attention_grad(%q: tensor<2x8x32xf32>, %m: tensor<8x2xf32>) {
  // expected-error @below {{'lm.masked_attention_grad' op mask [8, 2] must be [2, 8]}}
  %0:3 = lm.masked_attention_grad %q, %q, %q, %m, %q {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<8x2xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  return
}

// -----

// Tests that reshape keeps the element count.
func.func @reshape(%x: tensor<4x8xf32>) {
  // expected-error @below {{'lm.reshape' op cannot reshape [4, 8] (32 elements) to [5, 8] (40 elements)}}
  %0 = lm.reshape %x : (tensor<4x8xf32>) -> tensor<5x8xf32>
  return
}

// -----

// Tests that transpose needs a permutation of the dims.
func.func @transpose_perm(%x: tensor<4x8xf32>) {
  // expected-error @below {{'lm.transpose' op [0, 0] is not a permutation of the dims of x [4, 8]}}
  %0 = lm.transpose %x {permutation = array<i64: 0, 0>} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return
}

// -----

// Tests that the transposed shape is checked.
func.func @transpose_result(%x: tensor<4x8xf32>) {
  // expected-error @below {{'lm.transpose' op result type 'tensor<4x8xf32>' does not match the expected shape [8, 4]}}
  %0 = lm.transpose %x {permutation = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that slice bounds must lie inside the operand.
func.func @slice_bounds(%x: tensor<4x8xf32>) {
  // expected-error @below {{'lm.slice' op dimension 1 of x [4, 8] needs 0 <= start <= limit <= 8, got start 2 and limit 9}}
  %0 = lm.slice %x {start = array<i64: 0, 2>, limit = array<i64: 4, 9>, stride = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x7xf32>
  return
}

// -----

// Tests that slice strides must be positive.
func.func @slice_stride(%x: tensor<4x8xf32>) {
  // expected-error @below {{stride [1, 0] must be >= 1 (dimension 1)}}
  %0 = lm.slice %x {start = array<i64: 0, 0>, limit = array<i64: 4, 8>, stride = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that a strided slice's shape rounds up.
func.func @slice_result(%x: tensor<4x8xf32>) {
  // expected-error @below {{'lm.slice' op result type 'tensor<4x2xf32>' does not match the expected shape [4, 3]}}
  %0 = lm.slice %x {start = array<i64: 0, 1>, limit = array<i64: 4, 8>, stride = array<i64: 1, 3>} : (tensor<4x8xf32>) -> tensor<4x2xf32>
  return
}

// -----

// Tests that slice keeps the element type.
func.func @slice_type(%x: tensor<4xi32>) {
  // expected-error @below {{'lm.slice' op result element type 'f32' differs from the operand's 'i32'}}
  %0 = lm.slice %x {start = array<i64: 0>, limit = array<i64: 4>, stride = array<i64: 1>} : (tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

// Tests that cross_entropy targets drop the vocabulary dim of the logits.
func.func @cross_entropy_targets(%l: tensor<4x16xf32>, %t: tensor<16xi32>) {
  // expected-error @below {{'lm.cross_entropy' op targets [16] must be [4] (logits [4, 16] without the vocabulary dim)}}
  %0 = lm.cross_entropy %l, %t : (tensor<4x16xf32>, tensor<16xi32>) -> tensor<f32>
  return
}

// -----

// Tests that linear_cross_entropy's weight contracts with h along D (a tied [V, D] table needs transpose_rhs).
func.func @linear_cross_entropy_weight(%h: tensor<4x16xf32>, %w: tensor<100x16xf32>, %t: tensor<4xi32>) {
  // expected-error @below {{'lm.linear_cross_entropy' op contracted dimensions differ: lhs [4, 16] has K = 16, rhs [100, 16] has K = 100}}
  %0 = lm.linear_cross_entropy %h, %w, %t : (tensor<4x16xf32>, tensor<100x16xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

// Tests that linear_cross_entropy's h and w share one element type (-lm-mixed-precision casts both).
func.func @linear_cross_entropy_mixed(%h: tensor<4x16xbf16>, %w: tensor<100x16xf32>, %t: tensor<4xi32>) {
  // expected-error @below {{'lm.linear_cross_entropy' op operands must share one element type, got h bf16 and w f32}}
  %0 = lm.linear_cross_entropy %h, %w, %t {transpose_rhs = true} : (tensor<4x16xbf16>, tensor<100x16xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

// Tests that bf16 operands give an f32 loss and gradients, and take an f32 seed.
func.func @linear_cross_entropy_bf16_seed(%h: tensor<4x16xbf16>, %w: tensor<100x16xbf16>, %t: tensor<4xi32>, %s: tensor<f64>) {
  // expected-error @below {{'lm.linear_cross_entropy_with_grad' op dloss must be f32 (the type of the loss), got f64}}
  %dh, %dw, %l = lm.linear_cross_entropy_with_grad %h, %w, %t, %s {transpose_rhs = true} : (tensor<4x16xbf16>, tensor<100x16xbf16>, tensor<4xi32>, tensor<f64>) -> (tensor<4x16xf32>, tensor<100x16xf32>, tensor<f32>)
  return
}

// -----

// Tests that bf16 operands never give a bf16 loss.
func.func @linear_cross_entropy_bf16_loss(%h: tensor<4x16xbf16>, %w: tensor<100x16xbf16>, %t: tensor<4xi32>) {
  // expected-error @below {{'lm.linear_cross_entropy' op result #0 must be 0-d float tensor of 32-bit float or 64-bit float values, but got 'tensor<bf16>'}}
  %0 = lm.linear_cross_entropy %h, %w, %t {transpose_rhs = true} : (tensor<4x16xbf16>, tensor<100x16xbf16>, tensor<4xi32>) -> tensor<bf16>
  return
}

// -----

// Tests that accuracy's targets drop the class dim of the logits.
func.func @accuracy_targets(%l: tensor<4x16xf32>, %t: tensor<16xi32>) {
  // expected-error @below {{'lm.accuracy' op targets [16] must be [4] (logits [4, 16] without the vocabulary dim)}}
  %0 = lm.accuracy %l, %t : (tensor<4x16xf32>, tensor<16xi32>) -> tensor<f32>
  return
}

// -----

// Tests that cross_entropy returns a scalar.
func.func @cross_entropy_scalar(%l: tensor<4x16xf32>, %t: tensor<4xi32>) {
  // expected-error @below {{result #0 must be 0-d float tensor}}
  %0 = lm.cross_entropy %l, %t : (tensor<4x16xf32>, tensor<4xi32>) -> tensor<1xf32>
  return
}

// -----

// Tests that sum_to's result must broadcast to its operand.
func.func @sum_to(%x: tensor<4x8xf32>) {
  // expected-error @below {{'lm.sum_to' op result [4] does not broadcast to operand [4, 8]: dimension 4 vs 8 at position -1 from the end}}
  %0 = lm.sum_to %x : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that gelu_grad's dy has the shape of x.
func.func @gelu_grad(%x: tensor<4xf32>, %dy: tensor<5xf32>) {
  // expected-error @below {{'lm.gelu_grad' op dy type 'tensor<5xf32>' does not match the expected shape [4]}}
  %0 = lm.gelu_grad %x, %dy : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that layer_norm_grad's dgamma is [D].
func.func @layer_norm_grad(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @below {{'lm.layer_norm_grad' op dgamma type 'tensor<4xf32>' does not match the expected shape [8]}}
  %0:3 = lm.layer_norm_grad %x, %g, %x : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that attention_grad checks the forward rule.
func.func @attention_grad(%q: tensor<2x8x30xf32>) {
  // expected-error @below {{'lm.attention_grad' op last dim of q [2, 8, 30] (30) is not divisible by num_heads = 4}}
  %0:3 = lm.attention_grad %q, %q, %q, %q {num_heads = 4 : i64} : (tensor<2x8x30xf32>, tensor<2x8x30xf32>, tensor<2x8x30xf32>, tensor<2x8x30xf32>) -> (tensor<2x8x30xf32>, tensor<2x8x30xf32>, tensor<2x8x30xf32>)
  return
}

// -----

// Tests that softmax_grad's dy has the shape of y.
func.func @softmax_grad(%y: tensor<4x8xf32>, %dy: tensor<8xf32>) {
  // expected-error @below {{'lm.softmax_grad' op dy type 'tensor<8xf32>' does not match the expected shape [4, 8]}}
  %0 = lm.softmax_grad %y, %dy : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that cross_entropy_grad returns the logits' shape.
func.func @cross_entropy_grad(%l: tensor<4x16xf32>, %t: tensor<4xi32>, %d: tensor<f32>) {
  // expected-error @below {{'lm.cross_entropy_grad' op result type 'tensor<16xf32>' does not match the expected shape [4, 16]}}
  %0 = lm.cross_entropy_grad %l, %t, %d : (tensor<4x16xf32>, tensor<4xi32>, tensor<f32>) -> tensor<16xf32>
  return
}

// -----

// Tests that embedding_grad's dy matches the ids and the table width.
func.func @embedding_grad(%ids: tensor<3xi32>, %dy: tensor<3x5xf32>) {
  // expected-error @below {{'lm.embedding_grad' op dy type 'tensor<3x5xf32>' does not match the expected shape [3, 4]}}
  %0 = lm.embedding_grad %ids, %dy : (tensor<3xi32>, tensor<3x5xf32>) -> tensor<10x4xf32>
  return
}

// -----

// Tests that embedding_grad returns a table (the result is the rule's table).
func.func @embedding_grad_rank(%ids: tensor<3xi32>, %dy: tensor<3x4xf32>) {
  // expected-error @below {{'lm.embedding_grad' op table [40] must have rank 2 [V, D]}}
  %0 = lm.embedding_grad %ids, %dy : (tensor<3xi32>, tensor<3x4xf32>) -> tensor<40xf32>
  return
}

// -----

// Tests that embedding_grad_add's dy matches the ids and the base table's width.
func.func @embedding_grad_add(%base: tensor<10x4xf32>, %ids: tensor<3xi32>, %dy: tensor<3x5xf32>) {
  // expected-error @below {{'lm.embedding_grad_add' op dy [3, 5] must be [3, 4] (ids [3] with D of base [10, 4])}}
  %0 = lm.embedding_grad_add %base, %ids, %dy : (tensor<10x4xf32>, tensor<3xi32>, tensor<3x5xf32>) -> tensor<10x4xf32>
  return
}

// -----

// Tests that slice_grad's dy has the forward slice's shape.
func.func @slice_grad(%dy: tensor<4x3xf32>) {
  // expected-error @below {{'lm.slice_grad' op dy type 'tensor<4x3xf32>' does not match the expected shape [4, 4]}}
  %0 = lm.slice_grad %dy {start = array<i64: 0, 0>, limit = array<i64: 4, 8>, stride = array<i64: 1, 2>} : (tensor<4x3xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that softmax_grad needs a last dimension.
func.func @softmax_grad_rank(%y: tensor<f32>) {
  // expected-error @below {{'lm.softmax_grad' op y must have rank >= 1}}
  %0 = lm.softmax_grad %y, %y : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return
}

// -----

// Tests that cross_entropy_grad checks the targets like the forward op.
func.func @cross_entropy_grad_targets(%l: tensor<4x16xf32>, %t: tensor<5xi32>, %d: tensor<f32>) {
  // expected-error @below {{'lm.cross_entropy_grad' op targets [5] must be [4] (logits [4, 16] without the vocabulary dim)}}
  %0 = lm.cross_entropy_grad %l, %t, %d : (tensor<4x16xf32>, tensor<5xi32>, tensor<f32>) -> tensor<4x16xf32>
  return
}

// -----

// Tests that slice_grad needs one start, limit and stride per dim.
func.func @slice_grad_count(%dy: tensor<4x4xf32>) {
  // expected-error @below {{'lm.slice_grad' op start [0], limit [4, 8] and stride [1, 2] must each have one entry per dim of x [4, 8]}}
  %0 = lm.slice_grad %dy {start = array<i64: 0>, limit = array<i64: 4, 8>, stride = array<i64: 1, 2>} : (tensor<4x4xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that attention needs at least one head.
func.func @attention_zero_heads(%q: tensor<2x8x32xf32>) {
  // expected-error @below {{'lm.attention' op num_heads = 0 must be >= 1}}
  %0 = lm.attention %q, %q, %q {num_heads = 0 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

// Tests that matmul's lhs must be at least a matrix.
func.func @matmul_lhs_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @below {{'lm.matmul' op lhs [8] must have rank >= 2}}
  %0 = lm.matmul %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that matmul's rhs is a shared matrix or batched like the lhs.
func.func @matmul_rhs_rank(%a: tensor<2x3x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @below {{'lm.matmul' op rhs [3, 8, 4] must have rank 2 or the rank of lhs [2, 3, 4, 8]}}
  %0 = lm.matmul %a, %b : (tensor<2x3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x3x4x4xf32>
  return
}

// -----

// Tests that sum_to cannot raise the rank.
func.func @sum_to_rank(%x: tensor<8xf32>) {
  // expected-error @below {{'lm.sum_to' op result [4, 8] has higher rank than operand [8]}}
  %0 = lm.sum_to %x : (tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that a transpose permutation has one entry per dim.
func.func @transpose_perm_length(%x: tensor<4x8xf32>) {
  // expected-error @below {{'lm.transpose' op permutation [1, 0, 2] has 3 entries but x [4, 8] has rank 2}}
  %0 = lm.transpose %x {permutation = array<i64: 1, 0, 2>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Tests that a fused region's arguments have the types of the fusion's inputs.
func.func @fusion_arg_type(%x: tensor<4xf32>) {
  // expected-error @below {{'lm.fusion' op region argument 0 has type 'tensor<8xf32>', but input 0 has type 'tensor<4xf32>'}}
  %0 = lm.fusion %x : (tensor<4xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    lm.yield %a : tensor<8xf32>
  }
  return
}

// -----

// Tests that lm.yield returns the fusion's result types.
func.func @fusion_yield_types(%x: tensor<4xf32>) {
  // expected-error @below {{'lm.fusion' op lm.yield returns 'tensor<4xf32>' but the results are 'tensor<2x2xf32>'}}
  %0 = lm.fusion %x : (tensor<4xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = lm.neg %a : (tensor<4xf32>) -> tensor<4xf32>
    lm.yield %n : tensor<4xf32>
  }
  return
}

// -----

// Tests that a fused region holds lm ops only, never another fusion.
func.func @fusion_nested(%x: tensor<4xf32>) {
  %0 = lm.fusion %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @below {{'lm.fusion' op cannot be inside an lm.fusion region (only lm ops, not nested fusions)}}
    %n = lm.fusion %a : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%b: tensor<4xf32>):
      lm.yield %b : tensor<4xf32>
    }
    lm.yield %n : tensor<4xf32>
  }
  return
}

// -----

// Tests that lm.yield lives only in a fused region.
func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @below {{'lm.yield' op expects parent op 'lm.fusion'}}
  lm.yield %x : tensor<4xf32>
}

// -----

// Tests that grouped-query attention needs kv heads that divide the query heads.
func.func @attention_kv_heads(%q: tensor<2x4x6xf32>, %kv: tensor<2x4x4xf32>) {
  // expected-error @below {{'lm.attention' op num_kv_heads = 2 does not divide num_heads = 3}}
  %0 = lm.attention %q, %kv, %kv {num_heads = 3 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x6xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

// Tests that concat's operands agree off its axis.
func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @below {{'lm.concat' op lhs [2, 3] and rhs [3, 3] differ in dimension 0 (only axis 1 may differ)}}
  %0 = lm.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Tests that reduce_max's axes are sorted and in range.
func.func @reduce_max_axes(%x: tensor<2x3xf32>) {
  // expected-error @below {{'lm.reduce_max' op axis 2 is outside the rank 2 of x [2, 3]}}
  %0 = lm.reduce_max %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return
}

// -----

// Tests that rms_norm's epsilon is positive.
func.func @rms_norm_eps(%x: tensor<2x3xf32>, %g: tensor<3xf32>) {
  // expected-error @below {{'lm.rms_norm' op epsilon must be finite and > 0, got 0}}
  %0 = lm.rms_norm %x, %g {epsilon = 0.0 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that take_along_axis's index must broadcast to x off the axis.
func.func @take_along_axis_shape(%x: tensor<2x3xf32>, %i: tensor<3x4xi32>) {
  // expected-error @below {{'lm.take_along_axis' op indices [3, 4] do not broadcast to x [2, 3] in dimension 0 (only axis 1 may differ)}}
  %0 = lm.take_along_axis %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x4xi32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that gelu_erf_grad's dy has the shape of x.
func.func @gelu_erf_grad(%x: tensor<4xf32>, %dy: tensor<5xf32>) {
  // expected-error @below {{'lm.gelu_erf_grad' op dy type 'tensor<5xf32>' does not match the expected shape [4]}}
  %0 = lm.gelu_erf_grad %x, %dy : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that take_along_axis's axis is inside the rank.
func.func @take_along_axis_axis(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) {
  // expected-error @below {{'lm.take_along_axis' op axis 2 is outside the rank 2 of x [2, 3]}}
  %0 = lm.take_along_axis %x, %i {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that sample's bits are the logits' shape without the vocabulary dim.
func.func @sample_bits(%l: tensor<2x4x8xf32>, %b: tensor<2x8xi32>) {
  // expected-error @below {{'lm.sample' op bits [2, 8] must be [2, 4] (logits [2, 4, 8] without the vocabulary dim)}}
  %0 = lm.sample %l, %b : (tensor<2x4x8xf32>, tensor<2x8xi32>) -> tensor<2x8xi32>
  return
}

// -----

// Tests that take_along_axis_grad's dy has the shape the forward op gives.
func.func @take_along_axis_grad_dy(%i: tensor<1x4xi32>, %dy: tensor<2x5xf32>) {
  // expected-error @below {{'lm.take_along_axis_grad' op dy type 'tensor<2x5xf32>' does not match the expected shape [2, 4]}}
  %0 = lm.take_along_axis_grad %i, %dy {axis = 1 : i64} : (tensor<1x4xi32>, tensor<2x5xf32>) -> tensor<2x3xf32>
  return
}

// -----

// Tests that sample's result is i32.
func.func @sample_result(%l: tensor<2x8xf32>, %b: tensor<2xi32>) {
  // expected-error @below {{'lm.sample' op result #0 must be statically shaped tensor of 32-bit signless integer values}}
  %0 = lm.sample %l, %b : (tensor<2x8xf32>, tensor<2xi32>) -> tensor<2xf32>
  return
}

// -----

// Tests that to_float keeps the shape.
func.func @to_float_shape(%x: tensor<2x4xi32>) {
  // expected-error @below {{'lm.to_float' op result type 'tensor<8xf32>' does not match the expected shape [2, 4]}}
  %0 = lm.to_float %x : (tensor<2x4xi32>) -> tensor<8xf32>
  return
}

// -----

// Tests that where_int selects i32 values only.
func.func @where_int_float_values(%m: tensor<2x4xf32>, %a: tensor<2x4xi32>, %b: tensor<2x4xf32>) {
  // expected-error @below {{'lm.where_int' op operand #2 must be statically shaped tensor of 32-bit signless integer values}}
  %0 = lm.where_int %m, %a, %b : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<2x4xf32>) -> tensor<2x4xi32>
  return
}

// -----

// Tests that where_int's mask is a float mask.
func.func @where_int_int_cond(%m: tensor<2x4xi32>, %a: tensor<2x4xi32>) {
  // expected-error @below {{'lm.where_int' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float values}}
  %0 = lm.where_int %m, %a, %a : (tensor<2x4xi32>, tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  return
}

// -----

// Tests that where_int's operands must broadcast and its result is their broadcast.
func.func @where_int_shape(%m: tensor<2x4xf32>, %a: tensor<2x4xi32>, %b: tensor<3xi32>) {
  // expected-error @below {{'lm.where_int' op}}
  %0 = lm.where_int %m, %a, %b : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<3xi32>) -> tensor<2x4xi32>
  return
}

// -----

// Tests that where_int's result type is the inferred one.
func.func @where_int_result(%m: tensor<2x4xf32>, %a: tensor<2x4xi32>) {
  // expected-error @below {{'lm.where_int' op result #0 must be statically shaped tensor of 32-bit signless integer values}}
  %0 = lm.where_int %m, %a, %a : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that a dynamic slice must fit its dimension.
func.func @dynamic_slice_size(%x: tensor<8x4xf32>, %off: tensor<i32>) {
  // expected-error @below {{'lm.dynamic_slice' op start = 6 and size = 3 must satisfy 0 <= start, 1 <= size and start + size <= 8 (dimension 0 of x [8, 4])}}
  %0 = lm.dynamic_slice %x, %off {axis = 0 : i64, size = 3 : i64, start = 6 : i64} : (tensor<8x4xf32>, tensor<i32>) -> tensor<3x4xf32>
  return
}

// -----

// Tests that the position offset is a scalar.
func.func @dynamic_slice_offset(%x: tensor<8x4xf32>, %off: tensor<1xi32>) {
  // expected-error @below {{'lm.dynamic_slice' op operand #1 must be 0-d i32 tensor}}
  %0 = lm.dynamic_slice %x, %off {axis = 0 : i64, size = 1 : i64, start = 0 : i64} : (tensor<8x4xf32>, tensor<1xi32>) -> tensor<1x4xf32>
  return
}

// -----

// Tests that new cache rows must match the cache's batch and width.
func.func @cache_write_width(%c: tensor<1x8x4xf32>, %x: tensor<1x1x2xf32>, %off: tensor<i32>) {
  // expected-error @below {{'lm.cache_write' op x [1, 1, 2] must be [1, C <= 8, 4] to fit the cache [1, 8, 4]}}
  %0 = lm.cache_write %c, %x, %off : (tensor<1x8x4xf32>, tensor<1x1x2xf32>, tensor<i32>) -> tensor<1x8x4xf32>
  return
}

// -----

// Tests that cached attention checks the heads of its queries against the cache.
func.func @cached_attention_heads(%q: tensor<1x1x32xf32>, %c: tensor<1x8x24xf32>, %off: tensor<i32>) {
  // expected-error @below {{'lm.cached_attention' op the cache k [1, 8, 24] must be [1, W >= 1, 16] (2 key/value heads of q [1, 1, 32])}}
  %0 = lm.cached_attention %q, %c, %c, %off {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x1x32xf32>, tensor<1x8x24xf32>, tensor<1x8x24xf32>, tensor<i32>) -> tensor<1x1x32xf32>
  return
}

// -----

// Tests that fill makes float tensors only (it stands for a gradient).
func.func @fill_int() {
  // expected-error @below {{'lm.fill' op result #0 must be statically shaped tensor of 32-bit float or 64-bit float values}}
  %0 = lm.fill 0.0 : tensor<4xi32>
  return
}

// -----

// Tests that a reduce-scatter needs a dimension the group divides.
func.func @reduce_scatter_not_divisible(%x: tensor<5x6xf32>) {
  // expected-error @below {{'lm.reduce_scatter' op dimension 0 of x [5, 6] is not divisible by group_size 2}}
  %0 = lm.reduce_scatter %x {mesh_axis = 0 : i64, group_size = 2 : i64, dim = 0 : i64} : (tensor<5x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

// Tests that a collective names a mesh axis that exists.
func.func @all_reduce_bad_axis(%x: tensor<4xf32>) {
  // expected-error @below {{'lm.all_reduce' op mesh_axis must be 0 (data) or 1 (tensor), got 2}}
  %0 = lm.all_reduce %x {mesh_axis = 2 : i64, group_size = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that an all-gather's result has the gathered dimension.
func.func @all_gather_wrong_result(%x: tensor<4x6xf32>) {
  // expected-error @below {{'lm.all_gather' op result type 'tensor<4x6xf32>' does not match the expected shape [4, 12]}}
  %0 = lm.all_gather %x {mesh_axis = 0 : i64, group_size = 2 : i64, dim = 1 : i64} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

// Tests that axis_index names a mesh axis that exists.
func.func @axis_index_bad_axis() {
  // expected-error @below {{'lm.axis_index' op mesh_axis must be 0 (data) or 1 (tensor), got 2}}
  %0 = lm.axis_index {mesh_axis = 2 : i64, group_size = 2 : i64} : tensor<i32>
  return
}

// -----

// Tests that axis_index's group has a rank.
func.func @axis_index_empty_group() {
  // expected-error @below {{'lm.axis_index' op group_size must be at least 1, got 0}}
  %0 = lm.axis_index {mesh_axis = 1 : i64, group_size = 0 : i64} : tensor<f32>
  return
}

// -----

// Tests that axis_index gives a scalar.
func.func @axis_index_not_scalar() {
  // expected-error @below {{'lm.axis_index' op result type 'tensor<2xi32>' does not match the expected shape []}}
  %0 = lm.axis_index {mesh_axis = 1 : i64, group_size = 2 : i64} : tensor<2xi32>
  return
}

// -----

// Tests that to_int keeps the shape.
func.func @to_int_shape(%x: tensor<2x4xf32>) {
  // expected-error @below {{'lm.to_int' op result type 'tensor<4x2xi32>' does not match the expected shape [2, 4]}}
  %0 = lm.to_int %x : (tensor<2x4xf32>) -> tensor<4x2xi32>
  return
}

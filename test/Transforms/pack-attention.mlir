// RUN: lm-opt %s -split-input-file -lm-pack-attention | FileCheck %s
// RUN: lm-opt %s -split-input-file -lm-pack-attention | lm-opt -split-input-file | FileCheck %s
// RUN: lmc compile %models/gpt2.lm --preset tiny --emit=train-mlir | FileCheck %s --check-prefix=GPT
// RUN: lmc compile %models/gpt2.lm --preset tiny --emit=train-mlir --target cpu,cuda | FileCheck %s --check-prefix=CUDA
// RUN: lmc compile %models/gpt2.lm --preset tiny --emit=train-mlir --pack-attention=false | FileCheck %s --check-prefix=CUDA
// RUN: lmc compile %models/gpt2.lm --preset tiny --emit=train-mlir --fusion=none | FileCheck %s --check-prefix=CUDA
// RUN: lmc compile %models/gpt2.lm --preset tiny --emit=train-mlir --precision bf16 | FileCheck %s --check-prefix=GPT
// RUN: lmc compile %models/llama.lm --preset tiny --emit=train-mlir | FileCheck %s --check-prefix=LLAMA
// RUN: lmc compile %models/gpt2.lm --preset tiny --mesh tensor=2 --emit=train-mlir | FileCheck %s --check-prefix=TP

// Tests that -lm-pack-attention makes attention read q, k, v in place from the
// tensor they are side-by-side column slices of (a fused qkv projection), and
// its grad write dq, dk, dv as one dqkv in place of their concatenation: the
// train step's attention_stats / attention_grad_stats pair (the concatenation
// as any tree along the last axis), a forward attention, and grouped-query
// widths. Slices in another order, slices that leave columns or rows out, q, k,
// v of two tensors, a dk read outside the concatenation and masked attention
// are left alone. In lmc's pipeline it fires on GPT-2's block (fp32 and bf16:
// the attention and its slices stay f32 there), not for a CUDA target, not with
// --pack-attention=false or --fusion=none, and not on LLaMA (separate q, k, v
// projections, RoPE'd). Under tensor parallelism it fires on each rank's qkv,
// whose columns are the rank's q, k and v heads side by side.

// GPT-LABEL: func.func @causal_lm_train_step(
// GPT-NOT:   lm.attention_stats
// GPT-NOT:   lm.concat
// GPT:       %[[Y:.*]], %[[LSE:.*]] = lm.packed_attention_stats %[[QKV:[^ ]*]] {causal = true, num_heads = 4 : i64} : (tensor<12x64x384xf32>) -> (tensor<12x64x128xf32>, tensor<12x4x64xf32>)
// GPT-NOT:   lm.concat
// GPT:       lm.packed_attention_grad_stats %[[QKV]], %[[Y]], %[[LSE]], %{{.*}} {causal = true, num_heads = 4 : i64} : (tensor<12x64x384xf32>, tensor<12x64x128xf32>, tensor<12x4x64xf32>, tensor<12x64x128xf32>) -> tensor<12x64x384xf32>
// GPT-NOT:   lm.concat
// GPT-NOT:   lm.attention

// TP-LABEL: func.func @causal_lm_train_step(
// TP:       lm.packed_attention_stats %{{.*}} {causal = true, num_heads = 2 : i64} : (tensor<12x64x192xf32>) -> (tensor<12x64x64xf32>, tensor<12x2x64xf32>)
// TP:       lm.packed_attention_grad_stats {{.*}} -> tensor<12x64x192xf32>

// CUDA-LABEL: func.func @causal_lm_train_step(
// CUDA-NOT:   lm.packed_attention
// CUDA:       lm.attention_stats
// CUDA:       lm.concat
// CUDA-NOT:   lm.packed_attention

// LLAMA-LABEL: func.func @{{.*}}train_step(
// LLAMA-NOT:   lm.packed_attention
// LLAMA:       attention_grad_stats
// LLAMA-NOT:   lm.packed_attention

// CHECK-LABEL: func.func @gpt_block(
// CHECK-SAME:  %[[QKV:[^:]*]]: tensor<2x8x96xf32>, %[[DY:[^:]*]]: tensor<2x8x32xf32>
// CHECK-NEXT:  %[[Y:.*]], %[[LSE:.*]] = lm.packed_attention_stats %[[QKV]] {causal = true, num_heads = 4 : i64} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
// CHECK-NEXT:  %[[DQKV:.*]] = lm.packed_attention_grad_stats %[[QKV]], %[[Y]], %[[LSE]], %[[DY]] {causal = true, num_heads = 4 : i64} : (tensor<2x8x96xf32>, tensor<2x8x32xf32>, tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
// CHECK-NEXT:  return %[[Y]], %[[DQKV]]
func.func @gpt_block(%qkv: tensor<2x8x96xf32>, %dy: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x96xf32>) {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 96>, start = array<i64: 0, 0, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %y, %lse = lm.attention_stats %q, %k, %v {causal = true, num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
  %dq, %dk, %dv = lm.attention_grad_stats %q, %k, %v, %y, %lse, %dy {causal = true, num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %kv = lm.concat %dk, %dv {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x64xf32>
  %dqkv = lm.concat %dq, %kv {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x64xf32>) -> tensor<2x8x96xf32>
  return %y, %dqkv : tensor<2x8x32xf32>, tensor<2x8x96xf32>
}

// -----

// CHECK-LABEL: func.func @gqa_left_tree(
// CHECK-NOT:   lm.slice
// CHECK:       lm.packed_attention_stats %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x64xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
// CHECK-NEXT:  lm.packed_attention_grad_stats {{.*}} -> tensor<2x8x64xf32>
// CHECK-NOT:   lm.concat
func.func @gqa_left_tree(%qkv: tensor<2x8x64xf32>, %dy: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x64xf32>) {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x64xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 8, 48>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x64xf32>) -> tensor<2x8x16xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 48>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x64xf32>) -> tensor<2x8x16xf32>
  %y, %lse = lm.attention_stats %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
  %dq, %dk, %dv = lm.attention_grad_stats %q, %k, %v, %y, %lse, %dy {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x32xf32>, tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  %qk = lm.concat %dq, %dk {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x16xf32>) -> tensor<2x8x48xf32>
  %dqkv = lm.concat %qk, %dv {axis = 2 : i64} : (tensor<2x8x48xf32>, tensor<2x8x16xf32>) -> tensor<2x8x64xf32>
  return %y, %dqkv : tensor<2x8x32xf32>, tensor<2x8x64xf32>
}

// -----

// CHECK-LABEL: func.func @forward(
// CHECK-NEXT:  %[[Y:.*]] = lm.packed_attention %arg0 {causal = true, num_heads = 2 : i64} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
// CHECK-NEXT:  return %[[Y]]
func.func @forward(%qkv: tensor<2x8x96xf32>) -> tensor<2x8x32xf32> {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 96>, start = array<i64: 0, 0, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %y = lm.attention %q, %k, %v {causal = true, num_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// CHECK-LABEL: func.func @slice_read_elsewhere(
// CHECK:       %[[K:.*]] = lm.slice %arg0
// CHECK-NOT:   lm.slice
// CHECK:       %[[Y:.*]] = lm.packed_attention %arg0
// CHECK-NEXT:  return %[[Y]], %[[K]]
func.func @slice_read_elsewhere(%qkv: tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 96>, start = array<i64: 0, 0, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %y = lm.attention %q, %k, %v {num_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y, %k : tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// -----

// k before q: not the projection layout the packed ops read.
// CHECK-LABEL: func.func @kqv_order(
// CHECK-NOT:   lm.packed_attention
// CHECK:       lm.attention
func.func @kqv_order(%qkv: tensor<2x8x96xf32>) -> tensor<2x8x32xf32> {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 96>, start = array<i64: 0, 0, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %y = lm.attention %q, %k, %v {num_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// qkv has columns besides q, k, v.
// CHECK-LABEL: func.func @extra_columns(
// CHECK-NOT:   lm.packed_attention
// CHECK:       lm.attention
func.func @extra_columns(%qkv: tensor<2x8x100xf32>) -> tensor<2x8x32xf32> {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x100xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x100xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 96>, start = array<i64: 0, 0, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x100xf32>) -> tensor<2x8x32xf32>
  %y = lm.attention %q, %k, %v {num_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// k comes from another tensor.
// CHECK-LABEL: func.func @two_sources(
// CHECK-NOT:   lm.packed_attention
// CHECK:       lm.attention
func.func @two_sources(%qkv: tensor<2x8x96xf32>, %other: tensor<2x8x96xf32>) -> tensor<2x8x32xf32> {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %other {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 96>, start = array<i64: 0, 0, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %y = lm.attention %q, %k, %v {num_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// A slice that leaves positions out (rows 1..8 of 9).
// CHECK-LABEL: func.func @rows(
// CHECK-NOT:   lm.packed_attention
// CHECK:       lm.attention
func.func @rows(%qkv: tensor<2x9x96xf32>) -> tensor<2x8x32xf32> {
  %q = lm.slice %qkv {limit = array<i64: 2, 9, 32>, start = array<i64: 0, 1, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x9x96xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 9, 64>, start = array<i64: 0, 1, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x9x96xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 9, 96>, start = array<i64: 0, 1, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x9x96xf32>) -> tensor<2x8x32xf32>
  %y = lm.attention %q, %k, %v {num_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// dk is also returned: the grad cannot write it inside dqkv, so neither op of the pair is packed.
// CHECK-LABEL: func.func @dk_read_elsewhere(
// CHECK-NOT:   lm.packed_attention
// CHECK:       lm.attention_stats
// CHECK:       lm.attention_grad_stats
// CHECK:       lm.concat
func.func @dk_read_elsewhere(%qkv: tensor<2x8x96xf32>, %dy: tensor<2x8x32xf32>) -> (tensor<2x8x96xf32>, tensor<2x8x32xf32>) {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 96>, start = array<i64: 0, 0, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %y, %lse = lm.attention_stats %q, %k, %v {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
  %dq, %dk, %dv = lm.attention_grad_stats %q, %k, %v, %y, %lse, %dy {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %kv = lm.concat %dk, %dv {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x64xf32>
  %dqkv = lm.concat %dq, %kv {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x64xf32>) -> tensor<2x8x96xf32>
  return %dqkv, %dk : tensor<2x8x96xf32>, tensor<2x8x32xf32>
}

// -----

// The gradients concatenated as [dk, dq, dv]: not qkv's layout.
// CHECK-LABEL: func.func @concat_order(
// CHECK-NOT:   lm.packed_attention
// CHECK:       lm.attention_grad_stats
func.func @concat_order(%qkv: tensor<2x8x96xf32>, %dy: tensor<2x8x32xf32>) -> tensor<2x8x96xf32> {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 96>, start = array<i64: 0, 0, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %y, %lse = lm.attention_stats %q, %k, %v {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
  %dq, %dk, %dv = lm.attention_grad_stats %q, %k, %v, %y, %lse, %dy {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %kq = lm.concat %dk, %dq {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x64xf32>
  %dqkv = lm.concat %kq, %dv {axis = 2 : i64} : (tensor<2x8x64xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
  return %dqkv : tensor<2x8x96xf32>
}

// -----

// Masked attention has no packed form.
// CHECK-LABEL: func.func @masked(
// CHECK-NOT:   lm.packed_attention
// CHECK:       lm.masked_attention
func.func @masked(%qkv: tensor<2x8x96xf32>, %mask: tensor<2x8xf32>) -> tensor<2x8x32xf32> {
  %q = lm.slice %qkv {limit = array<i64: 2, 8, 32>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %k = lm.slice %qkv {limit = array<i64: 2, 8, 64>, start = array<i64: 0, 0, 32>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %v = lm.slice %qkv {limit = array<i64: 2, 8, 96>, start = array<i64: 0, 0, 64>, stride = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
  %y = lm.masked_attention %q, %k, %v, %mask {num_heads = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

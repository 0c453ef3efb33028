// Pins -lm-remat's decisions (through -test-print-remat) and the live
// intervals they leave (through -test-print-liveness) for two layers of the GPT
// block as the frontend writes them (models/blocks: pre-norm attention with a
// fused qkv projection sliced three ways, then the GELU MLP, each with its
// residual add), after the train pipeline (autodiff, canonicalize, cse,
// fusion). Each op carries its layer's NameLoc, as frontend/Builtins.cpp's
// tagLayer gives every copy of a `repeat`. The loss is a sum of squares of the
// last layer's output, so layer.1's output is read outside it. The pins below
// are of the sliced form (pack-attention=false: a plan for a CUDA target); the
// PACKED ones of the default CPU form, where attention reads the qkv GEMM's
// output in place (-lm-pack-attention): that output is then what the backward
// keeps, the same bytes as the three slices, and no slice is left to decide.
// RUN: lm-opt %s --lm-train-pipeline=pack-attention=false --test-print-remat=policy=none -o /dev/null | FileCheck %s --check-prefix=NONE
// RUN: lm-opt %s --lm-train-pipeline=pack-attention=false --test-print-remat=policy=selective -o /dev/null | FileCheck %s --check-prefix=SEL
// RUN: lm-opt %s --lm-train-pipeline=pack-attention=false --test-print-remat=policy=full -o /dev/null | FileCheck %s --check-prefix=FULL
// RUN: lm-opt %s --lm-train-pipeline=pack-attention=false '--test-print-remat=policy=auto budget=8500' -o /dev/null | FileCheck %s --check-prefix=AUTO-8500
// RUN: lm-opt %s --lm-train-pipeline=pack-attention=false '--test-print-remat=policy=auto budget=7000' -o /dev/null | FileCheck %s --check-prefix=AUTO-7000
// RUN: lm-opt %s --lm-train-pipeline=pack-attention=false --test-print-liveness -o /dev/null | FileCheck %s --check-prefix=LIVE-NONE
// RUN: lm-opt %s --lm-train-pipeline=pack-attention=false --lm-remat=policy=selective --test-print-liveness -o /dev/null | FileCheck %s --check-prefix=LIVE-SEL
// RUN: lm-opt %s --lm-train-pipeline=pack-attention=false --lm-remat=policy=full --test-print-liveness -o /dev/null | FileCheck %s --check-prefix=LIVE-FULL
// RUN: lm-opt %s --lm-train-pipeline=pack-attention=false '--lm-remat=policy=auto budget=8500' --test-print-liveness -o /dev/null | FileCheck %s --check-prefix=LIVE-AUTO
// RUN: lm-opt %s --lm-train-pipeline --test-print-remat=policy=selective -o /dev/null | FileCheck %s --check-prefix=PACKED-SEL
// RUN: lm-opt %s --lm-train-pipeline --test-print-liveness -o /dev/null | FileCheck %s --check-prefix=PACKED-LIVE

// PACKED-SEL: remat @gpt_train_step policy=selective
// PACKED-SEL-NEXT:   layer.0: lm.layer_norm: recompute (read by the backward)
// PACKED-SEL-NEXT:   layer.0: lm.fusion (gemm): keep (gemm)
// PACKED-SEL-NEXT:   layer.0: lm.packed_attention_stats: recompute (read by the backward)
// PACKED-SEL:        layer.1: lm.fusion (gemm): keep (gemm)
// PACKED-SEL-NEXT:   layer.1: lm.packed_attention_stats: recompute (read by the backward)
// PACKED-SEL:        recompute 7 ops, keep 7
// PACKED-LIVE: liveness @gpt_train_step: 63 ops, 40 intervals, estimated activation peak 9344 bytes at op 17 lm.matmul (layer.1)
// PACKED-LIVE-NEXT:   [0, 60] 256 bytes lm.layer_norm (layer.0) live at peak
// PACKED-LIVE-NEXT:   [1, 55] 768 bytes lm.fusion (layer.0) live at peak
// PACKED-LIVE-NEXT:   [2, 55] 256 bytes lm.packed_attention_stats (layer.0) #0 live at peak

// none: the pass decides nothing.
// NONE: remat @gpt_train_step policy=none
// NONE-NEXT:   recompute 0 ops, keep 0

// selective (Megatron's): the norms, the q/k/v slices and the attention core
// are recomputed; GEMMs (the fused projections with their bias and residual
// epilogues) are kept. The qkv GEMM is read only by its slices: forward only.
// SEL: remat @gpt_train_step policy=selective
// SEL-NEXT:   layer.0: lm.layer_norm: recompute (read by the backward)
// SEL-NEXT:   layer.0: lm.fusion (gemm): forward only
// SEL-NEXT:   layer.0: lm.slice: recompute (read by the backward)
// SEL-NEXT:   layer.0: lm.slice: recompute (read by the backward)
// SEL-NEXT:   layer.0: lm.slice: recompute (read by the backward)
// SEL-NEXT:   layer.0: lm.attention_stats: recompute (read by the backward)
// SEL-NEXT:   layer.0: lm.fusion (gemm): keep (gemm)
// SEL-NEXT:   layer.0: lm.layer_norm: recompute (read by the backward)
// SEL-NEXT:   layer.0: lm.fusion (gemm): keep (gemm)
// SEL-NEXT:   layer.0: lm.fusion (gemm): keep (gemm)
// SEL-NEXT:   layer.1: lm.layer_norm: recompute (read by the backward)
// SEL-NEXT:   layer.1: lm.fusion (gemm): forward only
// SEL-NEXT:   layer.1: lm.slice: recompute (read by the backward)
// SEL-NEXT:   layer.1: lm.slice: recompute (read by the backward)
// SEL-NEXT:   layer.1: lm.slice: recompute (read by the backward)
// SEL-NEXT:   layer.1: lm.attention_stats: recompute (read by the backward)
// SEL-NEXT:   layer.1: lm.fusion (gemm): keep (gemm)
// SEL-NEXT:   layer.1: lm.layer_norm: recompute (read by the backward)
// SEL-NEXT:   layer.1: lm.fusion (gemm): keep (gemm)
// SEL-NEXT:   layer.1: lm.matmul: forward only
// SEL-NEXT:   layer.1: lm.fusion: recompute (read by the backward)
// SEL-NEXT:   recompute 13 ops, keep 5

// full: each layer's input is kept (layer.0's output, the residual stream
// layer.1 reads); the rest of both layers is recomputed, GEMMs included.
// FULL: remat @gpt_train_step policy=full
// FULL-NEXT:   layer.0: lm.layer_norm: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.fusion (gemm): recompute (feeds a recomputed value)
// FULL-NEXT:   layer.0: lm.slice: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.slice: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.slice: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.attention_stats: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.fusion (gemm): recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.layer_norm: recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.fusion (gemm): recompute (read by the backward)
// FULL-NEXT:   layer.0: lm.fusion (gemm): keep (layer output)
// FULL-NEXT:   layer.1: lm.layer_norm: recompute (read by the backward)
// FULL-NEXT:   layer.1: lm.fusion (gemm): recompute (feeds a recomputed value)
// FULL-NEXT:   layer.1: lm.slice: recompute (read by the backward)
// FULL-NEXT:   layer.1: lm.slice: recompute (read by the backward)
// FULL-NEXT:   layer.1: lm.slice: recompute (read by the backward)
// FULL-NEXT:   layer.1: lm.attention_stats: recompute (read by the backward)
// FULL-NEXT:   layer.1: lm.fusion (gemm): recompute (read by the backward)
// FULL-NEXT:   layer.1: lm.layer_norm: recompute (read by the backward)
// FULL-NEXT:   layer.1: lm.fusion (gemm): recompute (read by the backward)
// FULL-NEXT:   layer.1: lm.matmul: recompute (feeds a recomputed value)
// FULL-NEXT:   layer.1: lm.fusion: recompute (read by the backward)
// FULL-NEXT:   recompute 20 ops, keep 1

// auto, a budget just under none's estimated peak: the min-cut phase. The
// cut at the largest bytes-per-FLOP that fits recomputes the four norms and
// both attention cores (the slices stay: recomputing them would keep the
// qkv GEMM's output, as many bytes); then what the budget can spare is
// given back, the most FLOPs first: layer.0's attention core and first norm.
// AUTO-8500: remat @gpt_train_step policy=auto
// AUTO-8500-NEXT:   auto: budget 8500 bytes, estimated activation peak 9344 -> 8256 bytes, min-cut 6 ops at 0.486 bytes/FLOP, greedy 0 values, 0 layers full, 2 given back
// AUTO-8500-NEXT:   layer.0: lm.layer_norm: keep (fits the budget)
// AUTO-8500-NEXT:   layer.0: lm.fusion (gemm): forward only
// AUTO-8500-NEXT:   layer.0: lm.slice: keep (fits the budget)
// AUTO-8500-NEXT:   layer.0: lm.slice: keep (fits the budget)
// AUTO-8500-NEXT:   layer.0: lm.slice: keep (fits the budget)
// AUTO-8500-NEXT:   layer.0: lm.attention_stats: keep (fits the budget)
// AUTO-8500-NEXT:   layer.0: lm.fusion (gemm): keep (gemm)
// AUTO-8500-NEXT:   layer.0: lm.layer_norm: recompute (read by the backward)
// AUTO-8500-NEXT:   layer.0: lm.fusion (gemm): keep (gemm)
// AUTO-8500-NEXT:   layer.0: lm.fusion (gemm): keep (gemm)
// AUTO-8500-NEXT:   layer.1: lm.layer_norm: recompute (read by the backward)
// AUTO-8500-NEXT:   layer.1: lm.fusion (gemm): forward only
// AUTO-8500-NEXT:   layer.1: lm.slice: keep (fits the budget)
// AUTO-8500-NEXT:   layer.1: lm.slice: keep (fits the budget)
// AUTO-8500-NEXT:   layer.1: lm.slice: keep (fits the budget)
// AUTO-8500-NEXT:   layer.1: lm.attention_stats: recompute (read by the backward)
// AUTO-8500-NEXT:   layer.1: lm.fusion (gemm): keep (gemm)
// AUTO-8500-NEXT:   layer.1: lm.layer_norm: recompute (read by the backward)
// AUTO-8500-NEXT:   layer.1: lm.fusion (gemm): keep (gemm)
// AUTO-8500-NEXT:   layer.1: lm.matmul: forward only
// AUTO-8500-NEXT:   layer.1: lm.fusion: keep (fits the budget)
// AUTO-8500-NEXT:   recompute 4 ops, keep 14

// auto, a budget the cut cannot meet without GEMMs: its smallest-lambda cut
// (norms and attention cores) is kept, the greedy phase finds nothing more,
// and layer.0 is recomputed whole, as under full (the first layer first);
// then the non-GEMM ops the budget can spare are given back.
// AUTO-7000: remat @gpt_train_step policy=auto
// AUTO-7000-NEXT:   auto: budget 7000 bytes, estimated activation peak 9344 -> 6784 bytes, min-cut 6 ops at 1e-09 bytes/FLOP, greedy 0 values, 1 layers full, 8 given back
// AUTO-7000-NEXT:   layer.0: lm.layer_norm: keep (fits the budget)
// AUTO-7000-NEXT:   layer.0: lm.fusion (gemm): recompute (feeds a recomputed value)
// AUTO-7000-NEXT:   layer.0: lm.slice: keep (fits the budget)
// AUTO-7000-NEXT:   layer.0: lm.slice: keep (fits the budget)
// AUTO-7000-NEXT:   layer.0: lm.slice: recompute (read by the backward)
// AUTO-7000-NEXT:   layer.0: lm.attention_stats: keep (fits the budget)
// AUTO-7000-NEXT:   layer.0: lm.fusion (gemm): recompute (read by the backward)
// AUTO-7000-NEXT:   layer.0: lm.layer_norm: keep (fits the budget)
// AUTO-7000-NEXT:   layer.0: lm.fusion (gemm): recompute (read by the backward)
// AUTO-7000-NEXT:   layer.0: lm.fusion (gemm): keep (layer output)
// AUTO-7000-NEXT:   layer.1: lm.layer_norm: keep (fits the budget)
// AUTO-7000-NEXT:   layer.1: lm.fusion (gemm): forward only
// AUTO-7000-NEXT:   layer.1: lm.slice: keep (fits the budget)
// AUTO-7000-NEXT:   layer.1: lm.slice: keep (fits the budget)
// AUTO-7000-NEXT:   layer.1: lm.slice: keep (fits the budget)
// AUTO-7000-NEXT:   layer.1: lm.attention_stats: keep (fits the budget)
// AUTO-7000-NEXT:   layer.1: lm.fusion (gemm): keep (gemm)
// AUTO-7000-NEXT:   layer.1: lm.layer_norm: keep (fits the budget)
// AUTO-7000-NEXT:   layer.1: lm.fusion (gemm): keep (gemm)
// AUTO-7000-NEXT:   layer.1: lm.matmul: forward only
// AUTO-7000-NEXT:   layer.1: lm.fusion: keep (fits the budget)
// AUTO-7000-NEXT:   recompute 4 ops, keep 15

// The intervals: the estimated peak (the figure auto compares with its budget)
// and where it is, per policy; under none, the values live at the peak.
// LIVE-NONE: liveness @gpt_train_step: 73 ops, 54 intervals, estimated activation peak 9344 bytes at op 23 lm.matmul (layer.1)
// LIVE-NONE:   [0, 70] 256 bytes lm.layer_norm (layer.0) live at peak
// LIVE-NONE:   [2, 63] 256 bytes lm.slice (layer.0) live at peak
// LIVE-NONE:   [3, 63] 256 bytes lm.slice (layer.0) live at peak
// LIVE-NONE:   [4, 63] 256 bytes lm.slice (layer.0) live at peak
// LIVE-NONE:   [5, 63] 256 bytes lm.attention_stats (layer.0) #0 live at peak
// LIVE-NONE:   [5, 63] 64 bytes lm.attention_stats (layer.0) #1 live at peak
// LIVE-NONE:   [6, 57] 256 bytes lm.fusion (layer.0) live at peak
// LIVE-NONE:   [7, 56] 256 bytes lm.layer_norm (layer.0) live at peak
// LIVE-NONE:   [8, 52] 1024 bytes lm.fusion (layer.0) #0 live at peak
// LIVE-NONE:   [8, 51] 1024 bytes lm.fusion (layer.0) #1 live at peak
// LIVE-NONE:   [9, 46] 256 bytes lm.fusion (layer.0) live at peak
// LIVE-NONE:   [10, 45] 256 bytes lm.layer_norm (layer.1) live at peak
// LIVE-NONE:   [12, 38] 256 bytes lm.slice (layer.1) live at peak
// LIVE-NONE:   [13, 38] 256 bytes lm.slice (layer.1) live at peak
// LIVE-NONE:   [14, 38] 256 bytes lm.slice (layer.1) live at peak
// LIVE-NONE:   [15, 38] 256 bytes lm.attention_stats (layer.1) #0 live at peak
// LIVE-NONE:   [15, 38] 64 bytes lm.attention_stats (layer.1) #1 live at peak
// LIVE-NONE:   [16, 32] 256 bytes lm.fusion (layer.1) live at peak
// LIVE-NONE:   [17, 31] 256 bytes lm.layer_norm (layer.1) live at peak
// LIVE-NONE:   [18, 27] 1024 bytes lm.fusion (layer.1) #0 live at peak
// LIVE-NONE:   [18, 26] 1024 bytes lm.fusion (layer.1) #1 live at peak
// LIVE-NONE:   [20, 33] 256 bytes lm.fusion (layer.1) #1 live at peak
// LIVE-NONE:   [23, 27] 1024 bytes lm.matmul (layer.1) live at peak
// LIVE-SEL: liveness @gpt_train_step: 86 ops, 71 intervals, estimated activation peak 7680 bytes at op 24 lm.matmul (layer.1)
// LIVE-FULL: liveness @gpt_train_step: 93 ops, 80 intervals, estimated activation peak 5440 bytes at op 34 lm.matmul (layer.1)
// LIVE-AUTO: liveness @gpt_train_step: 77 ops, 59 intervals, estimated activation peak 8256 bytes at op 23 lm.matmul (layer.1)

#l0 = loc("layer.0")
#l1 = loc("layer.1")
func.func @gpt(%x: tensor<2x4x8xf32> {lm.input = "x"},
             %l0_ln1_g: tensor<8xf32> {lm.param = "l0_ln1_g", lm.init = {kind = "ones"}},
             %l0_ln1_b: tensor<8xf32> {lm.param = "l0_ln1_b", lm.init = {kind = "zeros"}},
             %l0_w_qkv: tensor<8x24xf32> {lm.param = "l0_w_qkv", lm.init = {kind = "zeros"}},
             %l0_b_qkv: tensor<24xf32> {lm.param = "l0_b_qkv", lm.init = {kind = "zeros"}},
             %l0_w_o: tensor<8x8xf32> {lm.param = "l0_w_o", lm.init = {kind = "zeros"}},
             %l0_b_o: tensor<8xf32> {lm.param = "l0_b_o", lm.init = {kind = "zeros"}},
             %l0_ln2_g: tensor<8xf32> {lm.param = "l0_ln2_g", lm.init = {kind = "ones"}},
             %l0_ln2_b: tensor<8xf32> {lm.param = "l0_ln2_b", lm.init = {kind = "zeros"}},
             %l0_w_fc: tensor<8x32xf32> {lm.param = "l0_w_fc", lm.init = {kind = "zeros"}},
             %l0_b_fc: tensor<32xf32> {lm.param = "l0_b_fc", lm.init = {kind = "zeros"}},
             %l0_w_p: tensor<32x8xf32> {lm.param = "l0_w_p", lm.init = {kind = "zeros"}},
             %l0_b_p: tensor<8xf32> {lm.param = "l0_b_p", lm.init = {kind = "zeros"}},
             %l1_ln1_g: tensor<8xf32> {lm.param = "l1_ln1_g", lm.init = {kind = "ones"}},
             %l1_ln1_b: tensor<8xf32> {lm.param = "l1_ln1_b", lm.init = {kind = "zeros"}},
             %l1_w_qkv: tensor<8x24xf32> {lm.param = "l1_w_qkv", lm.init = {kind = "zeros"}},
             %l1_b_qkv: tensor<24xf32> {lm.param = "l1_b_qkv", lm.init = {kind = "zeros"}},
             %l1_w_o: tensor<8x8xf32> {lm.param = "l1_w_o", lm.init = {kind = "zeros"}},
             %l1_b_o: tensor<8xf32> {lm.param = "l1_b_o", lm.init = {kind = "zeros"}},
             %l1_ln2_g: tensor<8xf32> {lm.param = "l1_ln2_g", lm.init = {kind = "ones"}},
             %l1_ln2_b: tensor<8xf32> {lm.param = "l1_ln2_b", lm.init = {kind = "zeros"}},
             %l1_w_fc: tensor<8x32xf32> {lm.param = "l1_w_fc", lm.init = {kind = "zeros"}},
             %l1_b_fc: tensor<32xf32> {lm.param = "l1_b_fc", lm.init = {kind = "zeros"}},
             %l1_w_p: tensor<32x8xf32> {lm.param = "l1_w_p", lm.init = {kind = "zeros"}},
             %l1_b_p: tensor<8xf32> {lm.param = "l1_b_p", lm.init = {kind = "zeros"}}) -> tensor<f32>
    attributes {lm.objective} {
  %l0_n1 = lm.layer_norm %x, %l0_ln1_g, %l0_ln1_b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_h = lm.matmul %l0_n1, %l0_w_qkv : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32> loc(#l0)
  %l0_qkv = lm.add %l0_h, %l0_b_qkv : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32> loc(#l0)
  %l0_q = lm.slice %l0_qkv {limit = array<i64: 2, 4, 8>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_k = lm.slice %l0_qkv {limit = array<i64: 2, 4, 16>, start = array<i64: 0, 0, 8>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_v = lm.slice %l0_qkv {limit = array<i64: 2, 4, 24>, start = array<i64: 0, 0, 16>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_att = lm.attention %l0_q, %l0_k, %l0_v {causal = true, num_heads = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_o = lm.matmul %l0_att, %l0_w_o : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_ob = lm.add %l0_o, %l0_b_o : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_r1 = lm.add %x, %l0_ob : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_n2 = lm.layer_norm %l0_r1, %l0_ln2_g, %l0_ln2_b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_f = lm.matmul %l0_n2, %l0_w_fc : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32> loc(#l0)
  %l0_fb = lm.add %l0_f, %l0_b_fc : (tensor<2x4x32xf32>, tensor<32xf32>) -> tensor<2x4x32xf32> loc(#l0)
  %l0_g = lm.gelu %l0_fb : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32> loc(#l0)
  %l0_m = lm.matmul %l0_g, %l0_w_p : (tensor<2x4x32xf32>, tensor<32x8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_mb = lm.add %l0_m, %l0_b_p : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l0_r2 = lm.add %l0_r1, %l0_mb : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc(#l0)
  %l1_n1 = lm.layer_norm %l0_r2, %l1_ln1_g, %l1_ln1_b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_h = lm.matmul %l1_n1, %l1_w_qkv : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32> loc(#l1)
  %l1_qkv = lm.add %l1_h, %l1_b_qkv : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32> loc(#l1)
  %l1_q = lm.slice %l1_qkv {limit = array<i64: 2, 4, 8>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_k = lm.slice %l1_qkv {limit = array<i64: 2, 4, 16>, start = array<i64: 0, 0, 8>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_v = lm.slice %l1_qkv {limit = array<i64: 2, 4, 24>, start = array<i64: 0, 0, 16>, stride = array<i64: 1, 1, 1>} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_att = lm.attention %l1_q, %l1_k, %l1_v {causal = true, num_heads = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_o = lm.matmul %l1_att, %l1_w_o : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_ob = lm.add %l1_o, %l1_b_o : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_r1 = lm.add %l0_r2, %l1_ob : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_n2 = lm.layer_norm %l1_r1, %l1_ln2_g, %l1_ln2_b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_f = lm.matmul %l1_n2, %l1_w_fc : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32> loc(#l1)
  %l1_fb = lm.add %l1_f, %l1_b_fc : (tensor<2x4x32xf32>, tensor<32xf32>) -> tensor<2x4x32xf32> loc(#l1)
  %l1_g = lm.gelu %l1_fb : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32> loc(#l1)
  %l1_m = lm.matmul %l1_g, %l1_w_p : (tensor<2x4x32xf32>, tensor<32x8xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_mb = lm.add %l1_m, %l1_b_p : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %l1_r2 = lm.add %l1_r1, %l1_mb : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc(#l1)
  %sq = lm.mul %l1_r2, %l1_r2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s = lm.sum_to %sq : (tensor<2x4x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// RUN: lm-opt %s -lm-mixed-precision | FileCheck %s
// RUN: lm-opt %s -lm-mixed-precision | lm-opt | FileCheck %s
// RUN: lm-opt %s '-lm-mixed-precision=precision=fp32' | FileCheck %s --check-prefix=FP32
// RUN: lm-opt %s -lm-mixed-precision -lm-fuse | FileCheck %s --check-prefix=FUSED
// RUN: lm-opt %s '-lm-mixed-precision=precision=fp16' | FileCheck %s --check-prefix=FP16
// RUN: not lm-opt %s '-lm-mixed-precision=precision=fp8' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: lm-opt %s --lm-train-pipeline='precision=bf16 fusion=none' | FileCheck %s
// RUN: not lm-opt %s --lm-train-pipeline='precision=fp8' 2>&1 | FileCheck %s --check-prefix=BAD-PIPELINE

// Tests -lm-mixed-precision's cast placement (docs/mixed-precision.md): every
// f32 GEMM operand is read through one bf16 cast of its value, placed right
// after the value's definition (a function argument: at the top), shared by
// every GEMM that reads the value; a reshape feeding a GEMM becomes a reshape
// of the cast (a view), and the f32 reshape goes; the result stays f32; f64
// GEMMs and everything that is not a GEMM are left alone. With -lm-fuse the
// cast of an elementwise value is written by its producer's kernel (the
// epilogue) and the cast of a reduced value by the reduction's kernel: only
// the casts of arguments and library results are kernels of their own.

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<8x16xf32>, %[[W1:[^:]*]]: tensor<16x32xf32>, %[[W2:[^:]*]]: tensor<32x16xf32>
// CHECK-DAG:     %[[W2B:.*]] = lm.cast %[[W2]] : (tensor<32x16xf32>) -> tensor<32x16xbf16>
// CHECK-DAG:     %[[W1B:.*]] = lm.cast %[[W1]] : (tensor<16x32xf32>) -> tensor<16x32xbf16>
// CHECK-DAG:     %[[XB:.*]] = lm.cast %[[X]] : (tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK:         %[[H:.*]] = lm.matmul %[[XB]], %[[W1B]] : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xf32>
// CHECK-NEXT:    %[[G:.*]] = lm.gelu %[[H]] : (tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %[[GB:.*]] = lm.cast %[[G]] : (tensor<8x32xf32>) -> tensor<8x32xbf16>
// CHECK-NEXT:    %[[Y:.*]] = lm.matmul %[[GB]], %[[W2B]] : (tensor<8x32xbf16>, tensor<32x16xbf16>) -> tensor<8x16xf32>
// The weight gradient reads the forward's bf16 copy of g, no second cast.
// CHECK-NEXT:    %[[YB:.*]] = lm.cast %[[Y]] : (tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK-NEXT:    %[[DW:.*]] = lm.matmul %[[GB]], %[[YB]]
// CHECK-SAME:      {transpose_lhs = true} : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xf32>
// CHECK:         return
// fp16 places its casts as bf16 does (these functions are no train steps, so
// no loss scale is asked for: test/Transforms/fp16-loss-scale.mlir).
// FP16-LABEL: func.func @mlp(
// FP16-DAG:     lm.cast %{{.*}} : (tensor<16x32xf32>) -> tensor<16x32xf16>
// FP16:         lm.matmul %{{.*}}, %{{.*}} : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf32>
// FP32-LABEL: func.func @mlp(
// FP32-NOT:     lm.cast
// FP32:         lm.matmul %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x16xf32>) -> (tensor<8x16xf32>, tensor<32x16xf32>) {
  %h = lm.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %g = lm.gelu %h : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = lm.matmul %g, %w2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %dw = lm.matmul %g, %y {transpose_lhs = true} : (tensor<8x32xf32>, tensor<8x16xf32>) -> tensor<32x16xf32>
  return %y, %dw : tensor<8x16xf32>, tensor<32x16xf32>
}

// CHECK-LABEL: func.func @flattened(
// CHECK-SAME:    %[[A:[^:]*]]: tensor<2x4x8xf32>
// CHECK:         %[[S:.*]] = lm.softmax %[[A]]
// CHECK-NEXT:    %[[SB:.*]] = lm.cast %[[S]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// CHECK-NOT:     lm.reshape %[[S]]
// CHECK:         %[[R:.*]] = lm.reshape %[[SB]] : (tensor<2x4x8xbf16>) -> tensor<8x8xbf16>
// CHECK:         lm.matmul %[[R]], %{{.*}} {transpose_lhs = true} : (tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<8x8xf32>
// CHECK:         lm.matmul %[[SB]], %{{.*}} : (tensor<2x4x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xf32>
func.func @flattened(%a: tensor<2x4x8xf32>, %b: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<2x4x8xf32>) {
  %s = lm.softmax %a : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = lm.reshape %s : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %p = lm.matmul %r, %b {transpose_lhs = true} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = lm.matmul %s, %b : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  return %p, %q : tensor<8x8xf32>, tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @double(
// CHECK-NOT:     lm.cast
// CHECK:         lm.matmul %{{.*}}, %{{.*}} : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
func.func @double(%a: tensor<4x4xf64>, %b: tensor<4x4xf64>) -> tensor<4x4xf64> {
  %c = lm.matmul %a, %b : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
  return %c : tensor<4x4xf64>
}

// Fused: the argument casts stay lm.cast, library kernels of their own (nothing
// computes their operand; lmc keeps a parameter's copy over the train step and
// lmrt skips its cast while AdamW writes the copy); gelu's cast is the epilogue's result (its f32 value is not kept);
// y's cast is its GEMM epilogue's second result; the reduction kernel
// (sum_to of a product) also writes the cast of the value it reduces.
// FUSED-LABEL: func.func @mlp(
// FUSED-COUNT-3: lm.cast %arg{{[0-9]+}} : (tensor<{{[0-9x]*}}xf32>) -> tensor<{{[0-9x]*}}xbf16>
// FUSED:         lm.fusion %{{.*}}, %{{.*}} : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
// FUSED-NEXT:    ^bb0(
// FUSED-NEXT:      lm.matmul
// FUSED-NEXT:      lm.gelu
// FUSED-NEXT:      lm.cast
// FUSED-NEXT:      lm.yield
// FUSED:         lm.fusion %{{.*}}, %{{.*}} : (tensor<8x32xbf16>, tensor<32x16xbf16>) -> (tensor<8x16xf32>, tensor<8x16xbf16>)
// FUSED-NEXT:    ^bb0(
// FUSED-NEXT:      lm.matmul
// FUSED-NEXT:      lm.cast
// FUSED-NEXT:      lm.yield
// FUSED-LABEL: func.func @reduced(
// FUSED:         lm.fusion %{{.*}}, %{{.*}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xbf16>, tensor<16xf32>)
// FUSED-NEXT:    ^bb0(
// FUSED-NEXT:      lm.mul
// FUSED-NEXT:      lm.cast
// FUSED-NEXT:      lm.sum_to
// FUSED-NEXT:      lm.yield %{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<16xf32>
func.func @reduced(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> (tensor<16xf32>, tensor<8x4xf32>) {
  %m = lm.mul %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %s = lm.sum_to %m : (tensor<8x16xf32>) -> tensor<16xf32>
  %y = lm.matmul %m, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %s, %y : tensor<16xf32>, tensor<8x4xf32>
}

// BAD-PIPELINE: unknown precision 'fp8' (expected bf16, fp16 or fp32)
// BAD: -lm-mixed-precision: precision must be bf16, fp16 or fp32, got 'fp8'

// The fused output projection and loss reads h and the (tied) table in bf16,
// one cast each, the table's at the top; its logits, softmax, loss and the
// gradients dh and dw stay f32 (its GEMMs accumulate in f32), as does the seed.
// CHECK-LABEL: func.func @fused_loss(
// CHECK-SAME:    %[[H:[^:]*]]: tensor<2x4x8xf32>, %[[W:[^:]*]]: tensor<16x8xf32>
// CHECK-DAG:     %[[WB:.*]] = lm.cast %[[W]] : (tensor<16x8xf32>) -> tensor<16x8xbf16>
// CHECK-DAG:     %[[HB:.*]] = lm.cast %[[H]] : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
// CHECK:         lm.linear_cross_entropy_with_grad %[[HB]], %[[WB]], %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<2x4xi32>, tensor<f32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<f32>)
// CHECK:         lm.linear_cross_entropy %[[HB]], %[[WB]], %{{.*}} {transpose_rhs = true} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<2x4xi32>) -> tensor<f32>
// FP16-LABEL: func.func @fused_loss(
// FP16:         lm.linear_cross_entropy_with_grad {{.*}} : (tensor<2x4x8xf16>, tensor<16x8xf16>, tensor<2x4xi32>, tensor<f32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<f32>)
// FP32-LABEL: func.func @fused_loss(
// FP32-NOT:     lm.cast
// FP32:         lm.linear_cross_entropy_with_grad {{.*}} : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi32>, tensor<f32>)
func.func @fused_loss(%h: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %t: tensor<2x4xi32>, %s: tensor<f32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<f32>, tensor<f32>) {
  %dh, %dw, %loss = lm.linear_cross_entropy_with_grad %h, %w, %t, %s {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi32>, tensor<f32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<f32>)
  %eval = lm.linear_cross_entropy %h, %w, %t {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %dh, %dw, %loss, %eval : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<f32>, tensor<f32>
}

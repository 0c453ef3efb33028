// Tests that every kind of value gets the right kind of buffer: parameters
// PARAM, data inputs INPUT (with their vocab), constants CONSTANT (raw
// little-endian bytes), the train step's gradient results GRAD buffers written
// directly by the step that computes them, and everything else ARENA; that
// step attributes, locations and FLOPs are recorded; and that the plan-level
// numbers (parameter count, FLOPs per step, predicted peak) follow the
// documented formulas for this tiny module. (No lm.data: the inputs x and
// targets are not the causal pipeline's single token input, see plan-bounds.mlir.)
// RUN: lmc compile %s --fusion=none --emit=plan-text -o %t.plan 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err

module attributes {
    lm.config = {batch = 2 : i64, scale = 5.000000e-01 : f64},
    lm.train = {beta1 = 9.000000e-01 : f64, beta2 = 9.900000e-01 : f64, clip_grad_norm = 1.000000e+00 : f64,
                eps = 1.000000e-08 : f64, lr = 1.000000e-02 : f64, min_lr = 1.000000e-03 : f64,
                optimizer = "adamw", schedule = "cosine", warmup = 10 : i64, weight_decay = 1.000000e-01 : f64}} {
  func.func @tiny(%w: tensor<4x3xf32> {lm.param = "w", lm.init = {kind = "normal", mean = 0.0 : f64, std = 2.000000e-02 : f64}},
                  %b: tensor<3xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                  %x: tensor<2x4xf32> {lm.input = "x"},
                  %t: tensor<2xi32> {lm.input = "targets", lm.vocab = 3 : i64}) -> tensor<f32> attributes {lm.objective} {
    %y = lm.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %z = lm.add %y, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %l = lm.cross_entropy %z, %t : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }

  func.func @tiny_train_step(%w: tensor<4x3xf32> {lm.param = "w", lm.init = {kind = "normal", mean = 0.0 : f64, std = 2.000000e-02 : f64}},
                             %b: tensor<3xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                             %x: tensor<2x4xf32> {lm.input = "x"},
                             %t: tensor<2xi32> {lm.input = "targets", lm.vocab = 3 : i64})
      -> (tensor<f32>, tensor<4x3xf32> {lm.grad_of = "w"}, tensor<3xf32> {lm.grad_of = "b"}) attributes {lm.train_step} {
    %one = lm.constant dense<1.0> : tensor<f32>
    %y = lm.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %z = lm.add %y, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %l = lm.cross_entropy %z, %t : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    %dz = lm.cross_entropy_grad %z, %t, %one : (tensor<2x3xf32>, tensor<2xi32>, tensor<f32>) -> tensor<2x3xf32>
    %db = lm.sum_to %dz : (tensor<2x3xf32>) -> tensor<3xf32>
    %dw = lm.matmul %x, %dz {transpose_lhs = true} : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    return %l, %dw, %db : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
  }
}

// CHECK: source: "{{.*}}buffers.mlir"
// CHECK: objective: "tiny"
// CHECK: config {
// CHECK-NEXT:   key: "batch"
// CHECK-NEXT:   value: 2
// CHECK: key: "scale"
// CHECK-NEXT: value: 0.5

// Parameters in train-step order; weight decay on rank >= 2 only.
// CHECK: params {
// CHECK-NEXT:   name: "w"
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: [4, 3]
// CHECK-NEXT:   }
// CHECK-NEXT:   init {
// CHECK-NEXT:     kind: NORMAL
// CHECK-NEXT:     std: 0.02
// CHECK-NEXT:   }
// CHECK-NEXT:   weight_decay: true
// CHECK-NEXT: }
// CHECK-NEXT: params {
// CHECK-NEXT:   name: "b"
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: F32
// CHECK-NEXT:     shape: [3]
// CHECK-NEXT:   }
// CHECK-NEXT:   init {
// CHECK-NEXT:   }
// CHECK-NEXT: }

// The plan-level inputs are the train step's.
// CHECK-NEXT: inputs {
// CHECK-NEXT:   name: "x"
// CHECK:      inputs {
// CHECK-NEXT:   name: "targets"
// CHECK-NEXT:   type {
// CHECK-NEXT:     dtype: I32
// CHECK-NEXT:     shape: [2]
// CHECK-NEXT:   }
// CHECK-NEXT:   vocab: 3
// CHECK-NEXT: }

// CHECK-LABEL: programs {
// CHECK-NEXT:   name: "train_step"
// Buffers 0-3: the arguments.
// CHECK-NEXT:   buffers {
// CHECK-NEXT:     kind: PARAM
// CHECK:          size_bytes: 48
// CHECK-NEXT:     name: "w"
// CHECK:        buffers {
// CHECK-NEXT:     kind: PARAM
// CHECK:          name: "b"
// CHECK:        buffers {
// CHECK-NEXT:     kind: INPUT
// CHECK:          name: "x"
// CHECK:        buffers {
// CHECK-NEXT:     kind: INPUT
// CHECK:          name: "targets"
// Buffer 4: the constant 1.0f, little-endian (first: the optimize stage puts
// constants at the top of the function).
// CHECK:        buffers {
// CHECK-NEXT:     kind: CONSTANT
// CHECK:          size_bytes: 4
// CHECK-NEXT:     data: "\000\000\200?"
// CHECK-NEXT:   }
// Buffers 5-7: y, z, loss (ARENA, the default kind, so the text omits it).
// CHECK-NEXT:   buffers {
// CHECK-NEXT:     type {
// CHECK-NEXT:       dtype: F32
// CHECK-NEXT:       shape: [2, 3]
// CHECK-NEXT:     }
// CHECK-NEXT:     size_bytes: 24
// CHECK-NEXT:   }
// CHECK:        buffers {
// CHECK-NEXT:     type {
// CHECK:          offset: 64
// CHECK-NEXT:     size_bytes: 24
// CHECK:        buffers {
// CHECK-NEXT:     type {
// CHECK-NEXT:       dtype: F32
// CHECK-NEXT:     }
// CHECK-NEXT:     size_bytes: 4
// CHECK-NEXT:   }
// dz has no buffer of its own (cross_entropy_with_grad writes it over z);
// buffers 8 and 9: the GRAD buffers of b and w.
// CHECK-NEXT:   buffers {
// CHECK-NEXT:     kind: GRAD
// CHECK:          size_bytes: 12
// CHECK-NEXT:     name: "b"
// CHECK-NEXT:   }
// CHECK-NEXT:   buffers {
// CHECK-NEXT:     kind: GRAD
// CHECK:          size_bytes: 48
// CHECK-NEXT:     name: "w"
// CHECK-NEXT:   }

// Steps: no step for the constant; gradients written straight to GRAD buffers.
// CHECK-NEXT:   steps {
// CHECK-NEXT:     op: "matmul"
// CHECK-NEXT:     inputs: [2, 0]
// CHECK-NEXT:     outputs: [5]
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "transpose_lhs"
// CHECK-NEXT:       value {
// CHECK-NEXT:         b: false
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "transpose_rhs"
// CHECK:          flops: 48
// CHECK-NEXT:     loc: "{{.*}}buffers.mlir:33:10"
// Each step's predicted traffic (CostOpInterface::getBytesAccessed): the
// operands read once and the results written once: 32 + 48 read, 24 written.
// CHECK-NEXT:     bytes: 104
// CHECK-NEXT:   }
// CHECK-NEXT:   steps {
// CHECK-NEXT:     op: "add"
// CHECK-NEXT:     inputs: [5, 1]
// CHECK-NEXT:     outputs: [6]
// CHECK-NEXT:     flops: 6
// CHECK-NEXT:     loc: "{{.*}}buffers.mlir:34:10"
// CHECK-NEXT:     bytes: 60
// The loss's forward and backward are one step (canonicalization), dz written
// over z.
// CHECK:        steps {
// CHECK-NEXT:     op: "cross_entropy_with_grad"
// CHECK-NEXT:     inputs: [6, 3, 4]
// CHECK-NEXT:     outputs: [6, 7]
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "ignore_index"
// CHECK-NEXT:       value {
// CHECK-NEXT:         i: -100
// CHECK:          flops: 66
// CHECK:        steps {
// CHECK-NEXT:     op: "sum_to"
// CHECK-NEXT:     inputs: [6]
// CHECK-NEXT:     outputs: [8]
// CHECK-NEXT:     flops: 6
// CHECK:        steps {
// CHECK-NEXT:     op: "matmul"
// CHECK-NEXT:     inputs: [2, 6]
// CHECK-NEXT:     outputs: [9]
// CHECK-NEXT:     attrs {
// CHECK-NEXT:       key: "transpose_lhs"
// CHECK-NEXT:       value {
// CHECK-NEXT:         b: true
// CHECK:          flops: 48
// CHECK-NOT:    op: "copy"
// CHECK:        outputs {
// CHECK-NEXT:     name: "loss"
// CHECK-NEXT:     buffer: 7
// CHECK-NEXT:   }
// CHECK-NEXT:   outputs {
// CHECK-NEXT:     name: "grad:w"
// CHECK-NEXT:     buffer: 9
// CHECK-NEXT:   }
// CHECK-NEXT:   outputs {
// CHECK-NEXT:     name: "grad:b"
// CHECK-NEXT:     buffer: 8
// CHECK-NEXT:   }
// CHECK:        arena_bytes: 128
// CHECK-NEXT:   flops: 174
// CHECK-NEXT: }

// The eval program has its own buffers, steps and arena, and no gradients.
// CHECK-LABEL: programs {
// CHECK-NEXT:   name: "eval"
// CHECK-NOT:    GRAD
// CHECK:        outputs {
// CHECK-NEXT:     name: "loss"
// CHECK-NEXT:     buffer: 6
// CHECK-NEXT:   }
// CHECK:        arena_bytes: 128
// CHECK-NEXT:   flops: 84
// CHECK-NEXT: }

// CHECK-NEXT: train {
// CHECK-NEXT:   optimizer {
// CHECK-NEXT:     kind: "adamw"
// CHECK-NEXT:     lr: 0.01
// CHECK-NEXT:     beta1: 0.9
// CHECK-NEXT:     beta2: 0.99
// CHECK-NEXT:     eps: 1e-08
// CHECK-NEXT:     weight_decay: 0.1
// CHECK-NEXT:   }
// CHECK-NEXT:   schedule {
// CHECK-NEXT:     kind: "cosine"
// CHECK-NEXT:     warmup_steps: 10
// CHECK-NEXT:     min_lr: 0.001
// CHECK-NEXT:   }
// CHECK-NEXT:   clip_grad_norm: 1
// CHECK-NEXT: }

// 15 parameters; 174 FLOPs per step; peak = 4 * 60 (params, grads, m, v)
// + 40 (inputs) + 128 (largest arena) = 408 bytes.
// CHECK-NEXT: param_count: 15
// CHECK-NEXT: flops_per_step: 174
// CHECK-NEXT: predicted_peak_bytes: 408
// CHECK-NEXT: compiler_version: "lmc {{.*}}"

// SUMMARY: lmc: wrote {{.*}}.plan: 15 parameters, 174.00 FLOP/step, predicted peak memory 408.0 B (408 bytes), no generated kernels, compiled in {{.*}} s

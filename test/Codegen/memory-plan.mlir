// Tests the memory plan: a value's arena memory is reused once the value is
// dead, a step's output never shares memory with its inputs, outputs live to
// the end of the program, and the built-in check confirms that no two
// simultaneously-live buffers overlap; a reshape of an arena value is a view
// of its buffer (no step), which lives as long as the view is read.
// The functions are written as lmc's optimize stage (canonicalize, CSE)
// leaves them: the seed constant first, no chain that folds (neg(neg(x))).
// RUN: lmc compile %s --fusion=none --emit=memory-plan | FileCheck %s

module {
  func.func @chain(%p: tensor<16xf32> {lm.param = "p", lm.init = {kind = "zeros"}},
                   %t: tensor<1xi32> {lm.input = "t", lm.vocab = 16 : i64}) -> tensor<f32> attributes {lm.objective} {
    // Each value is 64 bytes and dies at the next step: two slots suffice.
    %a1 = lm.gelu %p : (tensor<16xf32>) -> tensor<16xf32>
    %a2 = lm.gelu %a1 : (tensor<16xf32>) -> tensor<16xf32>
    %a3 = lm.gelu %a2 : (tensor<16xf32>) -> tensor<16xf32>
    %a4 = lm.gelu %a3 : (tensor<16xf32>) -> tensor<16xf32>
    %s = lm.add %a4, %a4 : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %wide = lm.reshape %s : (tensor<16xf32>) -> tensor<1x16xf32>
    %l = lm.cross_entropy %wide, %t : (tensor<1x16xf32>, tensor<1xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }

  func.func @chain_train_step(%p: tensor<16xf32> {lm.param = "p", lm.init = {kind = "zeros"}},
                              %t: tensor<1xi32> {lm.input = "t", lm.vocab = 16 : i64})
      -> (tensor<f32>, tensor<16xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %one = lm.constant dense<1.0> : tensor<f32>
    %x = lm.reshape %p : (tensor<16xf32>) -> tensor<1x16xf32>
    %big = lm.matmul %x, %x {transpose_lhs = true} : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<16x16xf32>
    %s = lm.sum_to %big : (tensor<16x16xf32>) -> tensor<16xf32>
    %w = lm.reshape %s : (tensor<16xf32>) -> tensor<1x16xf32>
    %l = lm.cross_entropy %w, %t : (tensor<1x16xf32>, tensor<1xi32>) -> tensor<f32>
    %dw = lm.cross_entropy_grad %w, %t, %one : (tensor<1x16xf32>, tensor<1xi32>, tensor<f32>) -> tensor<1x16xf32>
    %dp = lm.reshape %dw : (tensor<1x16xf32>) -> tensor<16xf32>
    return %l, %dp : tensor<f32>, tensor<16xf32>
  }
}

// Train step (the loss and its gradient are one cross_entropy_with_grad step):
// live ranges x [0,2) (a reshape of the parameter: a step), big [1,3), s [2,4):
// w is a view of s (no step), so s lives until w's last read; dw [3,5) and l
// [3,5) (an output: to the end); dp goes straight to the GRAD buffer. The
// largest value, big (1 KiB), is placed first at 0; x and s are live with it
// and go above it; w takes s's offset; dw, written by the step that reads w,
// gets a buffer of its own (a view is never written over) and reuses big's
// memory once big is dead; the loss goes above it.
// CHECK-LABEL: program train_step: 5 steps, 6 arena buffers, arena 1088 bytes
// CHECK-NEXT:   buffer 3 steps [0, 2) offset 1024 size 64 f32[1, 16]
// CHECK-NEXT:   buffer 4 steps [1, 3) offset 0 size 1024 f32[16, 16]
// CHECK-NEXT:   buffer 5 steps [2, 4) offset 1024 size 64 f32[16]
// CHECK-NEXT:   buffer 6 steps [2, 4) offset 1024 size 64 f32[1, 16] view of buffer 5
// CHECK-NEXT:   buffer 7 steps [3, 5) offset 0 size 64 f32[1, 16]
// CHECK-NEXT:   buffer 8 steps [3, 5) offset 64 size 4 f32[]
// CHECK-NEXT: check train_step: ok, no two simultaneously-live buffers overlap

// Eval: each value (a gelu chain, which does not fold) dies at the step after its definition, so the chain
// alternates between two 64-byte slots; the reshape of the sum is a view of it (no step), and the loss
// takes the other slot.
// CHECK-LABEL: program eval: 6 steps, 7 arena buffers, arena 128 bytes
// CHECK-NEXT:   buffer 2 steps [0, 2) offset 0 size 64 f32[16]
// CHECK-NEXT:   buffer 3 steps [1, 3) offset 64 size 64 f32[16]
// CHECK-NEXT:   buffer 4 steps [2, 4) offset 0 size 64 f32[16]
// CHECK-NEXT:   buffer 5 steps [3, 5) offset 64 size 64 f32[16]
// CHECK-NEXT:   buffer 6 steps [4, 6) offset 0 size 64 f32[16]
// CHECK-NEXT:   buffer 7 steps [4, 6) offset 0 size 64 f32[1, 16] view of buffer 6
// CHECK-NEXT:   buffer 8 steps [5, 6) offset 64 size 4 f32[]
// CHECK-NEXT: check eval: ok, no two simultaneously-live buffers overlap

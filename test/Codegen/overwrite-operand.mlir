// Tests the plan writer's in-place rule (LM_MayOverwriteOperand0): an
// embedding_grad_add (or cross_entropy_with_grad) whose operand 0 nothing else
// reads writes over it. Returned
// as a parameter's gradient, its base's producer (the matmul) writes straight
// into the GRAD buffer and embedding_grad_add updates it there, with no copy;
// an arena base is overwritten the same way; a base read again later keeps
// its bytes and the result gets a buffer of its own. lmrt accepts the plan
// and trains on it (the module follows the causal data convention).
// (Unfused, so that the add is a step of its own.)
// RUN: rm -rf %t && mkdir -p %t
// RUN: lmc compile %s --fusion=none -o %t/obj.plan
// RUN: lmrt inspect --steps %t/obj.plan | FileCheck %s
// RUN: lmrt data build --input %fortunes/wisdom --out %t/data > /dev/null
// RUN: lmrt run %t/obj.plan --data %t/data --steps 2 --eval-batches 0 2>&1 | FileCheck %s --check-prefix=TRAIN

module attributes {lm.data = {batch = 2 : i64, seq = 2 : i64, transform = "causal", vocab = 256 : i64}} {
  func.func @obj(%e: tensor<256x4xf32> {lm.param = "e", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                 %tokens: tensor<2x3xi32> {lm.input = "tokens", lm.vocab = 256 : i64}) -> tensor<f32> attributes {lm.objective} {
    %ids = lm.slice %tokens {start = array<i64: 0, 0>, limit = array<i64: 2, 2>, stride = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<2x2xi32>
    %tgt = lm.slice %tokens {start = array<i64: 0, 1>, limit = array<i64: 2, 3>, stride = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<2x2xi32>
    %h = lm.embedding %e, %ids : (tensor<256x4xf32>, tensor<2x2xi32>) -> tensor<2x2x4xf32>
    %z = lm.matmul %h, %e {transpose_rhs = true} : (tensor<2x2x4xf32>, tensor<256x4xf32>) -> tensor<2x2x256xf32>
    %l = lm.cross_entropy %z, %tgt : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }

  func.func @obj_train_step(%e: tensor<256x4xf32> {lm.param = "e", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                            %tokens: tensor<2x3xi32> {lm.input = "tokens", lm.vocab = 256 : i64})
      -> (tensor<f32>, tensor<256x4xf32> {lm.grad_of = "e"}) attributes {lm.train_step} {
    %one = lm.constant dense<1.0> : tensor<f32>
    %ids = lm.slice %tokens {start = array<i64: 0, 0>, limit = array<i64: 2, 2>, stride = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<2x2xi32>
    %tgt = lm.slice %tokens {start = array<i64: 0, 1>, limit = array<i64: 2, 3>, stride = array<i64: 1, 1>} : (tensor<2x3xi32>) -> tensor<2x2xi32>
    %h = lm.embedding %e, %ids : (tensor<256x4xf32>, tensor<2x2xi32>) -> tensor<2x2x4xf32>
    %z = lm.matmul %h, %e {transpose_rhs = true} : (tensor<2x2x4xf32>, tensor<256x4xf32>) -> tensor<2x2x256xf32>
    %l = lm.cross_entropy %z, %tgt : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> tensor<f32>
    %dz = lm.cross_entropy_grad %z, %tgt, %one : (tensor<2x2x256xf32>, tensor<2x2xi32>, tensor<f32>) -> tensor<2x2x256xf32>
    %dh = lm.matmul %dz, %e : (tensor<2x2x256xf32>, tensor<256x4xf32>) -> tensor<2x2x4xf32>
    %dz2 = lm.reshape %dz : (tensor<2x2x256xf32>) -> tensor<4x256xf32>
    %h2 = lm.reshape %h : (tensor<2x2x4xf32>) -> tensor<4x4xf32>
    %dhead = lm.matmul %dz2, %h2 {transpose_lhs = true} : (tensor<4x256xf32>, tensor<4x4xf32>) -> tensor<256x4xf32>
    // An arena base read by nothing else: overwritten. Then one read again
    // (by the add): a buffer of its own.
    %t1 = lm.embedding_grad_add %dhead, %ids, %dh : (tensor<256x4xf32>, tensor<2x2xi32>, tensor<2x2x4xf32>) -> tensor<256x4xf32>
    %t2 = lm.embedding_grad_add %t1, %ids, %dh : (tensor<256x4xf32>, tensor<2x2xi32>, tensor<2x2x4xf32>) -> tensor<256x4xf32>
    %t3 = lm.add %t2, %t1 : (tensor<256x4xf32>, tensor<256x4xf32>) -> tensor<256x4xf32>
    // Returned as e's gradient: the add writes e's GRAD buffer, updated in place.
    %de = lm.embedding_grad_add %t3, %ids, %dh : (tensor<256x4xf32>, tensor<2x2xi32>, tensor<2x2x4xf32>) -> tensor<256x4xf32>
    return %l, %de : tensor<f32>, tensor<256x4xf32>
  }
}

// The loss and its gradient: one cross_entropy_with_grad (canonicalization),
// whose dz overwrites the logits z, which nothing else reads.
// CHECK-LABEL: train_step
// CHECK:      3: matmul ({{[0-9]+}}, 0) -> ([[Z:[0-9]+]]: f32[2, 2, 256])
// CHECK-NEXT: 4: cross_entropy_with_grad ([[Z]], {{[0-9]+}}, {{[0-9]+}}) -> ([[Z]]: f32[2, 2, 256], {{[0-9]+}}: f32[])
// CHECK:      6: matmul ({{[0-9]+}}, {{[0-9]+}}) -> ([[HEAD:[0-9]+]]: f32[256, 4])
// CHECK-NEXT: 7: embedding_grad_add ([[HEAD]], [[IDS:[0-9]+]], [[DH:[0-9]+]]) -> ([[HEAD]]: f32[256, 4])
// CHECK-NEXT: 8: embedding_grad_add ([[HEAD]], [[IDS]], [[DH]]) -> ([[T2:[0-9]+]]: f32[256, 4])
// CHECK-NEXT: 9: add ([[T2]], [[HEAD]]) -> ([[GRAD:[0-9]+]]: f32[256, 4])
// CHECK-NEXT: 10: embedding_grad_add ([[GRAD]], [[IDS]], [[DH]]) -> ([[GRAD]]: f32[256, 4])
// CHECK-NOT:  copy
// CHECK:      eval

// TRAIN: step 2/2 | loss

// RUN: lm-opt %s -split-input-file -lm-spmd -verify-diagnostics | FileCheck %s
// RUN: lm-opt %s -split-input-file -lm-spmd -lm-autodiff -lm-spmd-gradients -verify-diagnostics | FileCheck %s --check-prefix=STEP
// RUN: lm-opt %s -split-input-file '-lm-spmd=tensor=1' | FileCheck %s --check-prefix=ONE

// Tests -lm-spmd's vocabulary-parallel embedding (Megatron's
// VocabParallelEmbedding): the table's rows are split over the tensor axis,
// each rank looks up the ids in its rows (lm.axis_index gives the rank, the
// other ids give masked zero rows) and an all-reduce sums the parts. The
// backward is autodiff's: the all-reduce's VJP is an all-reduce, the lookup's
// a scatter into the rank's rows, and the table's gradient is halved as a
// split parameter's is. The (untied) output head stays whole.
// CHECK-LABEL: func.func @untied(
// CHECK-SAME: %[[W:.*]]: tensor<4x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: %[[IDS:.*]]: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64}
// CHECK-SAME: tensor<8x8xf32> {lm.init = {kind = "zeros"}, lm.param = "head"}
// CHECK-NEXT: %[[R:.*]] = lm.axis_index {group_size = 2 : i64, mesh_axis = 1 : i64} : tensor<f32>
// CHECK-NEXT: %[[ROWS:.*]] = lm.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[FIRST:.*]] = lm.mul %[[R]], %[[ROWS]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[F:.*]] = lm.to_float %[[IDS]] : (tensor<2x3xi32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[LOCAL:.*]] = lm.sub %[[F]], %[[FIRST]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[ZERO:.*]] = lm.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[GE:.*]] = lm.ge %[[LOCAL]], %[[ZERO]]
// CHECK-NEXT: %[[LT:.*]] = lm.lt %[[LOCAL]], %[[ROWS]]
// CHECK-NEXT: %[[IN:.*]] = lm.mul %[[GE]], %[[LT]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[M:.*]] = lm.mul %[[LOCAL]], %[[IN]]
// CHECK-NEXT: %[[LIDS:.*]] = lm.to_int %[[M]] : (tensor<2x3xf32>) -> tensor<2x3xi32>
// CHECK-NEXT: %[[E:.*]] = lm.embedding %[[W]], %[[LIDS]] : (tensor<4x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[MASK:.*]] = lm.reshape %[[IN]] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT: %[[PART:.*]] = lm.mul %[[E]], %[[MASK]] : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[H:.*]] = lm.all_reduce %[[PART]] {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[N:.*]] = lm.layer_norm %[[H]]
// CHECK-NEXT: %[[L:.*]] = lm.matmul %[[N]], %{{.*}} : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: lm.cross_entropy %[[L]], %{{.*}} : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
// STEP-LABEL: func.func @untied_train_step(
// STEP: lm.all_reduce %{{.*}} {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x3x8xf32>)
// STEP: lm.all_reduce %{{.*}} {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x3x8xf32>)
// STEP: lm.embedding_grad %{{.*}} -> tensor<4x8xf32>
// STEP: %[[HALF:.*]] = lm.constant dense<5.000000e-01> : tensor<f32>
// STEP-NEXT: %[[DW:.*]] = lm.mul %{{.*}}, %[[HALF]] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// STEP: lm.all_reduce %{{.*}} {group_size = 2 : i64, mean = true, mesh_axis = 1 : i64} : (tensor<8x8xf32>)
// STEP: return {{.*}}%[[DW]]
// ONE-LABEL: func.func @untied(
// ONE-NOT: lm.sharding
// ONE-NOT: lm.axis_index
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @untied(%wte: tensor<8x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                    %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64},
                    %g: tensor<8xf32> {lm.param = "g", lm.init = {kind = "ones"}},
                    %head: tensor<8x8xf32> {lm.param = "head", lm.init = {kind = "zeros"}},
                    %t: tensor<2x3xi32> {lm.input = "t", lm.vocab = 8 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %h = lm.embedding %wte, %ids : (tensor<8x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %n = lm.layer_norm %h, %g, %g : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
    %l = lm.matmul %n, %head : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    %c = lm.cross_entropy %l, %t : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// A table tied to the output head stays whole (its head has no split form yet).
// CHECK-LABEL: func.func @tied(
// CHECK-SAME: tensor<8x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte"}
// CHECK-NOT: lm.axis_index
// CHECK: return
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @tied(%wte: tensor<8x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                  %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64},
                  %t: tensor<2x3xi32> {lm.input = "t", lm.vocab = 8 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %h = lm.embedding %wte, %ids : (tensor<8x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %l = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    %c = lm.cross_entropy %l, %t : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// Only the vocabulary (the largest table) is split: the 4-row table stays whole.
// A table read another way (here added to the activations) stays whole too.
// CHECK-LABEL: func.func @two_tables(
// CHECK-SAME: tensor<8x8xf32> {lm.init = {kind = "zeros"}, lm.param = "words", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: tensor<4x8xf32> {lm.init = {kind = "zeros"}, lm.param = "types"}
// CHECK: lm.embedding %{{.*}} : (tensor<8x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
// CHECK-LABEL: func.func @other_use(
// CHECK-SAME: tensor<8x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte"}
// CHECK-NOT: lm.axis_index
// CHECK: return
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @two_tables(%words: tensor<16x8xf32> {lm.param = "words", lm.init = {kind = "zeros"}},
                        %types: tensor<4x8xf32> {lm.param = "types", lm.init = {kind = "zeros"}},
                        %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 16 : i64},
                        %tt: tensor<2x3xi32> {lm.input = "tt", lm.vocab = 4 : i64}) -> tensor<2x3x8xf32>
      attributes {lm.model} {
    %a = lm.embedding %words, %ids : (tensor<16x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %b = lm.embedding %types, %tt : (tensor<4x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %s = lm.add %a, %b : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    return %s : tensor<2x3x8xf32>
  }
}

// -----

module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @other_use(%wte: tensor<8x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                       %ids: tensor<2x8xi32> {lm.input = "ids", lm.vocab = 8 : i64}) -> tensor<2x8x8xf32>
      attributes {lm.model} {
    %a = lm.embedding %wte, %ids : (tensor<8x8xf32>, tensor<2x8xi32>) -> tensor<2x8x8xf32>
    %s = lm.add %a, %wte : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
    return %s : tensor<2x8x8xf32>
  }
}

// -----

// A vocabulary the tensor axis does not divide stays whole, with a warning.
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  // expected-warning @below {{tensor parallelism: parameter 'wte' (7 rows, the vocabulary) is not divisible by mesh axis 'tensor' (2 ranks), so it stays whole on every rank; pad the vocabulary to a multiple of 2 to split it}}
  func.func @odd(%wte: tensor<7x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                 %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 7 : i64}) -> tensor<2x3x8xf32>
      attributes {lm.model} {
    %a = lm.embedding %wte, %ids : (tensor<7x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    return %a : tensor<2x3x8xf32>
  }
}

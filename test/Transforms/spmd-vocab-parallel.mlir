// RUN: lm-opt %s -split-input-file -lm-spmd -verify-diagnostics | FileCheck %s
// RUN: lm-opt %s -split-input-file -lm-spmd -lm-autodiff -lm-spmd-gradients -verify-diagnostics | FileCheck %s --check-prefix=STEP
// RUN: lm-opt %s -split-input-file '-lm-spmd=tensor=1' | FileCheck %s --check-prefix=ONE

// Tests -lm-spmd's vocabulary-parallel embedding (Megatron's
// VocabParallelEmbedding): the table's rows are split over the tensor axis,
// each rank looks up the ids in its rows (lm.axis_index gives the rank, the
// other ids give masked zero rows) and an all-reduce sums the parts. The
// backward is autodiff's: the all-reduce's VJP is an all-reduce, the lookup's
// a scatter into the rank's rows, and the table's gradient is halved as a
// split parameter's is. The untied output head [d, V] is split by its
// columns (the vocabulary, [8, 4] a rank) into the vocabulary-parallel loss
// (below): lm.linear_cross_entropy_stats without transpose_rhs, with a zero
// bias; its gradient is halved as the table's, and no head-sized all-reduce is
// left.
// CHECK-LABEL: func.func @untied(
// CHECK-SAME: %[[W:.*]]: tensor<4x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: %[[IDS:.*]]: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64}
// CHECK-SAME: %[[HEAD:[^:]*]]: tensor<8x4xf32> {lm.init = {kind = "zeros"}, lm.param = "head", lm.sharding = {split_axes = {{\[\[}}], [1]]}}
// CHECK-SAME: %[[TGT:[^:]*]]: tensor<2x3xi32> {lm.input = "t", lm.vocab = 8 : i64}
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
// CHECK-NEXT: %[[R2:.*]] = lm.axis_index
// CHECK-NEXT: %[[ROWS2:.*]] = lm.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[FIRST2:.*]] = lm.mul %[[R2]], %[[ROWS2]]
// CHECK-NEXT: %[[ZB:.*]] = lm.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT: lm.linear_cross_entropy_stats %[[N]], %[[HEAD]], %[[TGT]], %[[FIRST2]], %[[ZB]] {chunk_rows = 6 : i64, vocab = 8 : i64} : (tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<2x3xi32>, tensor<f32>, tensor<4xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-NOT: lm.matmul
// CHECK: return
// STEP-LABEL: func.func @untied_train_step(
// STEP: lm.all_reduce %{{.*}} {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x3x8xf32>)
// STEP: lm.all_reduce %{{.*}} {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x3x8xf32>)
// STEP: lm.embedding_grad %{{.*}} -> tensor<4x8xf32>
// STEP: %[[HALF:.*]] = lm.constant dense<5.000000e-01> : tensor<f32>
// STEP-NEXT: %[[DW:.*]] = lm.mul %{{.*}}, %[[HALF]] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// STEP: lm.constant dense<5.000000e-01> : tensor<f32>
// STEP-NEXT: %[[DHEAD:.*]] = lm.mul %{{.*}} : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
// STEP-NOT: lm.all_reduce {{.*}}tensor<8x8xf32>
// STEP: return {{.*}}%[[DW]]{{.*}}%[[DHEAD]]
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

// A table tied to the output head is split too: the head and its loss become
// Megatron's vocabulary-parallel cross-entropy, fused and chunked
// (passes/VocabParallel.cpp). lm.linear_cross_entropy_stats gives each row's
// logsumexp over the rank's 4 classes and the target's logit when the target is
// one of them; an all_gather of the ranks' logsumexps and an exact logsumexp over
// them (the max shift without a gradient), an all_reduce of the target logits,
// and the mean over the targets that are not ignore_index (-1 here) give the loss.
// CHECK-LABEL: func.func @tied(
// CHECK-SAME: %[[W:.*]]: tensor<4x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: %[[IDS:.*]]: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64}
// CHECK-SAME: %[[T:.*]]: tensor<2x3xi32> {lm.input = "t", lm.vocab = 8 : i64}
// CHECK: %[[H:.*]] = lm.all_reduce %{{.*}} {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[R:.*]] = lm.axis_index {group_size = 2 : i64, mesh_axis = 1 : i64} : tensor<f32>
// CHECK-NEXT: %[[ROWS:.*]] = lm.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[FIRST:.*]] = lm.mul %[[R]], %[[ROWS]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[ZB:.*]] = lm.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[LSE:.*]], %[[TL:.*]], %{{.*}}, %{{.*}} = lm.linear_cross_entropy_stats %[[H]], %[[W]], %[[T]], %[[FIRST]], %[[ZB]] {chunk_rows = 6 : i64, ignore_index = -1 : i64, transpose_rhs = true, vocab = 8 : i64} : (tensor<2x3x8xf32>, tensor<4x8xf32>, tensor<2x3xi32>, tensor<f32>, tensor<4xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-NEXT: %[[ROW:.*]] = lm.reshape %[[LSE]] : (tensor<2x3xf32>) -> tensor<1x6xf32>
// CHECK-NEXT: %[[G:.*]] = lm.all_gather %[[ROW]] {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[MAX:.*]] = lm.reduce_max %[[G]] {axes = array<i64: 0>} : (tensor<2x6xf32>) -> tensor<1x6xf32>
// CHECK-NEXT: %[[M:.*]] = lm.stop_gradient %[[MAX]]
// CHECK-NEXT: %[[C:.*]] = lm.sub %[[G]], %[[M]] : (tensor<2x6xf32>, tensor<1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[E:.*]] = lm.exp %[[C]]
// CHECK-NEXT: %[[S:.*]] = lm.sum_to %[[E]] : (tensor<2x6xf32>) -> tensor<1x6xf32>
// CHECK-NEXT: %[[LOG:.*]] = lm.log %[[S]]
// CHECK-NEXT: %[[ALL:.*]] = lm.add %[[M]], %[[LOG]]
// CHECK-NEXT: %[[LSEALL:.*]] = lm.reshape %[[ALL]] : (tensor<1x6xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[TLALL:.*]] = lm.all_reduce %[[TL]] {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[TF:.*]] = lm.to_float %[[T]]
// CHECK-NEXT: %[[IGN:.*]] = lm.constant dense<-1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[VALID:.*]] = lm.ne %[[TF]], %[[IGN]]
// CHECK-NEXT: %[[RL:.*]] = lm.sub %[[LSEALL]], %[[TLALL]]
// CHECK-NEXT: %[[CL:.*]] = lm.mul %[[RL]], %[[VALID]]
// CHECK-NEXT: %[[SUM:.*]] = lm.sum_to %[[CL]] : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[N:.*]] = lm.sum_to %[[VALID]] : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[ZERO:.*]] = lm.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[NONE:.*]] = lm.eq %[[N]], %[[ZERO]]
// CHECK-NEXT: %[[DIV:.*]] = lm.add %[[N]], %[[NONE]]
// CHECK-NEXT: %[[LOSS:.*]] = lm.div %[[SUM]], %[[DIV]]
// CHECK-NEXT: return %[[LOSS]]
// The backward: the stats op's VJP (the rank's dh part and its rows' gradient), the
// all_gather's (a reduce-scatter) and the all_reduce's; the table's gradient (lookup
// and head) is halved as a split parameter's is, and no table-sized all-reduce is left.
// STEP-LABEL: func.func @tied_train_step(
// STEP: lm.all_reduce %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// STEP: lm.reduce_scatter %{{.*}} {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x6xf32>) -> tensor<1x6xf32>
// STEP: %[[DH:.*]], %[[DW:.*]], %{{.*}} = lm.linear_cross_entropy_stats_grad %{{.*}} {chunk_rows = 6 : i64, ignore_index = -1 : i64, transpose_rhs = true, vocab = 8 : i64} : {{.*}} -> (tensor<2x3x8xf32>, tensor<4x8xf32>, tensor<4xf32>)
// STEP: lm.all_reduce %[[DH]] {group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<2x3x8xf32>)
// STEP: %[[HALF:.*]] = lm.constant dense<5.000000e-01> : tensor<f32>
// STEP-NEXT: lm.mul %{{.*}}, %[[HALF]] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// STEP-NOT: tensor<8x8xf32>
// STEP: return
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @tied(%wte: tensor<8x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                  %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64},
                  %t: tensor<2x3xi32> {lm.input = "t", lm.vocab = 8 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %h = lm.embedding %wte, %ids : (tensor<8x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %l = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    %c = lm.cross_entropy %l, %t {ignore_index = -1 : i64} : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// A program that returns the logits (generation's) gets the rank's columns
// all-gathered along the vocabulary.
// CHECK-LABEL: func.func @returned(
// CHECK-SAME: tensor<4x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK: %[[LOCAL:.*]] = lm.matmul %{{.*}} {transpose_rhs = true} : (tensor<1x3x8xf32>, tensor<4x8xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT: %[[WHOLE:.*]] = lm.all_gather %[[LOCAL]] {dim = 2 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
// CHECK-NEXT: return %[[WHOLE]]
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @returned(%wte: tensor<8x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                      %ids: tensor<1x3xi32> {lm.input = "ids", lm.vocab = 8 : i64}) -> tensor<1x3x8xf32>
      attributes {lm.model} {
    %h = lm.embedding %wte, %ids : (tensor<8x8xf32>, tensor<1x3xi32>) -> tensor<1x3x8xf32>
    %l = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
    return %l : tensor<1x3x8xf32>
  }
}

// -----

// A head that adds a bias parameter to its logits (BERT's MLM head) splits the
// bias with the classes: the stats op adds the rank's slice to its logits, and its
// VJP gives the slice's gradient. An accuracy of the logits becomes a
// vocabulary-parallel argmax: each rank's row max and the first class holding it
// (the stats op's max and argmax, numbered from the rank's first class),
// all-gathered; the argmax is the smallest class among the ranks holding the
// largest max (the others count as the vocabulary's size), which is the first
// maximal class, as lm.accuracy's. One stats op serves both (CSE, later, merges
// the loss's and the accuracy's).
// CHECK-LABEL: func.func @biased(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: %[[B:[^:]*]]: tensor<4xf32> {lm.init = {kind = "zeros"}, lm.param = "b", lm.sharding = {split_axes = {{\[\[}}1]]}}
// CHECK-SAME: %[[T:[^:]*]]: tensor<2x3xi32> {lm.input = "t", lm.vocab = 8 : i64}
// CHECK: %[[H:.*]] = lm.all_reduce
// CHECK: lm.linear_cross_entropy_stats %[[H]], %[[W]], %[[T]], %{{.*}}, %[[B]] {chunk_rows = 6 : i64, transpose_rhs = true, vocab = 8 : i64}
// CHECK: %[[LOSS:.*]] = lm.div
// CHECK-NEXT: %[[R:.*]] = lm.axis_index
// CHECK-NEXT: %[[ROWS:.*]] = lm.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[FIRST:.*]] = lm.mul %[[R]], %[[ROWS]]
// CHECK-NEXT: %{{.*}}, %{{.*}}, %[[MAX:.*]], %[[ARG:.*]] = lm.linear_cross_entropy_stats %[[H]], %[[W]], %[[T]], %[[FIRST]], %[[B]] {chunk_rows = 6 : i64, transpose_rhs = true, vocab = 8 : i64}
// CHECK-NEXT: %[[MR:.*]] = lm.reshape %[[MAX]] : (tensor<2x3xf32>) -> tensor<1x6xf32>
// CHECK-NEXT: %[[MAXES:.*]] = lm.all_gather %[[MR]] {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[AR:.*]] = lm.reshape %[[ARG]] : (tensor<2x3xf32>) -> tensor<1x6xf32>
// CHECK-NEXT: %[[ARGS:.*]] = lm.all_gather %[[AR]] {dim = 0 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[BEST:.*]] = lm.reduce_max %[[MAXES]] {axes = array<i64: 0>} : (tensor<2x6xf32>) -> tensor<1x6xf32>
// CHECK-NEXT: %[[HOLDS:.*]] = lm.eq %[[MAXES]], %[[BEST]] : (tensor<2x6xf32>, tensor<1x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[BEYOND:.*]] = lm.constant dense<8.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[CAND:.*]] = lm.where %[[HOLDS]], %[[ARGS]], %[[BEYOND]] : (tensor<2x6xf32>, tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[NEG:.*]] = lm.neg %[[CAND]]
// CHECK-NEXT: %[[NMAX:.*]] = lm.reduce_max %[[NEG]] {axes = array<i64: 0>} : (tensor<2x6xf32>) -> tensor<1x6xf32>
// CHECK-NEXT: %[[FIRSTMAX:.*]] = lm.neg %[[NMAX]]
// CHECK-NEXT: %[[AM:.*]] = lm.reshape %[[FIRSTMAX]] : (tensor<1x6xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[TF:.*]] = lm.to_float %[[T]]
// CHECK-NEXT: %[[IGN:.*]] = lm.constant dense<-1.000000e+02> : tensor<f32>
// CHECK-NEXT: %[[VALID:.*]] = lm.ne %[[TF]], %[[IGN]]
// CHECK-NEXT: %[[OK:.*]] = lm.eq %[[AM]], %[[TF]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[CNT:.*]] = lm.mul %[[OK]], %[[VALID]]
// CHECK-NEXT: %[[SUM:.*]] = lm.sum_to %[[CNT]] : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[N:.*]] = lm.sum_to %[[VALID]] : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %[[ZERO:.*]] = lm.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[NONE:.*]] = lm.eq %[[N]], %[[ZERO]]
// CHECK-NEXT: %[[DIV:.*]] = lm.add %[[N]], %[[NONE]]
// CHECK-NEXT: %[[ACC:.*]] = lm.div %[[SUM]], %[[DIV]]
// CHECK-NEXT: return %[[LOSS]], %[[ACC]]
// The train step: the bias's gradient is the stats VJP's dbias, halved as a split
// parameter's is; the accuracy (a metric) has no backward.
// STEP-LABEL: func.func @biased_train_step(
// STEP: %{{.*}}, %{{.*}}, %[[DB:.*]] = lm.linear_cross_entropy_stats_grad %{{.*}} -> (tensor<2x3x8xf32>, tensor<4x8xf32>, tensor<4xf32>)
// STEP: lm.mul %[[DB]], %{{.*}} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// STEP: return
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @biased(%wte: tensor<8x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                    %b: tensor<8xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                    %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64},
                    %t: tensor<2x3xi32> {lm.input = "t", lm.vocab = 8 : i64}) -> (tensor<f32>, tensor<f32> {lm.metric = "accuracy"})
      attributes {lm.objective} {
    %h = lm.embedding %wte, %ids : (tensor<8x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %l = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    %lb = lm.add %l, %b : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
    %c = lm.cross_entropy %lb, %t : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
    %a = lm.accuracy %lb, %t : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %c, %a : tensor<f32>, tensor<f32>
  }
}

// -----

// What keeps a head's parameters whole: a bias also read elsewhere (here added
// to the embeddings) keeps its table whole with it; logits that feed anything but
// the loss, an accuracy or a return (here a sample, as ELECTRA's generator draws)
// keep their table whole. The lookups of a whole table need no rewrite.
// CHECK-LABEL: func.func @bias_read_elsewhere(
// CHECK-SAME: tensor<8x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte"}
// CHECK-SAME: tensor<8xf32> {lm.init = {kind = "zeros"}, lm.param = "b"}
// CHECK-NOT: lm.axis_index
// CHECK: return
// CHECK-LABEL: func.func @sampled(
// CHECK-SAME: tensor<8x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte"}
// CHECK-NOT: lm.axis_index
// CHECK: return
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @bias_read_elsewhere(%wte: tensor<8x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                                 %b: tensor<8xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                                 %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64},
                                 %t: tensor<2x3xi32> {lm.input = "t", lm.vocab = 8 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %e = lm.embedding %wte, %ids : (tensor<8x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %h = lm.add %e, %b : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
    %l = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    %lb = lm.add %l, %b : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
    %c = lm.cross_entropy %lb, %t : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @sampled(%wte: tensor<8x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                     %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 8 : i64},
                     %bits: tensor<2x3xi32> {lm.input = "bits"}) -> tensor<2x3xi32>
      attributes {lm.model} {
    %h = lm.embedding %wte, %ids : (tensor<8x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %l = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
    %s = lm.sample %l, %bits : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    return %s : tensor<2x3xi32>
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

// The vocabulary is the largest parameter a lookup reads: an activation read as a
// table (SpanBERT gathers the boundary tokens' states from h as [B * T, d], here 6
// rows) neither counts nor is split, and the 4-row table is.
// CHECK-LABEL: func.func @activation_table(
// CHECK-SAME: tensor<2x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte", lm.sharding = {split_axes = {{\[\[}}1], []]}}
// CHECK: lm.embedding %{{.*}} : (tensor<6x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @activation_table(%wte: tensor<4x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                              %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 4 : i64},
                              %at: tensor<2x3xi32> {lm.input = "at", lm.vocab = 6 : i64}) -> tensor<2x3x8xf32>
      attributes {lm.model} {
    %h = lm.embedding %wte, %ids : (tensor<4x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %rows = lm.reshape %h : (tensor<2x3x8xf32>) -> tensor<6x8xf32>
    %g = lm.embedding %rows, %at : (tensor<6x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    return %g : tensor<2x3x8xf32>
  }
}

// -----

// A vocabulary the tensor axis does not divide (13 classes over 2 ranks) is
// padded, as Megatron-LM pads it: each rank holds a block of ceil(13 / 2) = 7
// classes, rank 1's last one padding, and the sharding records the logical size.
// The lookup is the divisible case's (no id reaches the padding row: ids are below
// the vocabulary). The head adds the padding mask to the rank's bias, -inf at the
// classes from 13 on (class j + 7 r >= 13), so the padding leaves the logsumexp, the
// max and the argmax, and its row and bias entry get no gradient. Returned logits
// drop the padding column after the all-gather.
// CHECK-LABEL: func.func @padded(
// CHECK-SAME: %[[W:[^:]*]]: tensor<7x8xf32> {lm.init = {kind = "zeros"}, lm.param = "wte", lm.sharding = {logical_size = 13 : i64, split_axes = {{\[\[}}1], []]}}
// CHECK-SAME: %[[B:[^:]*]]: tensor<7xf32> {lm.init = {kind = "zeros"}, lm.param = "b", lm.sharding = {logical_size = 13 : i64, split_axes = {{\[\[}}1]]}}
// CHECK-SAME: %[[T:[^:]*]]: tensor<2x3xi32> {lm.input = "t", lm.vocab = 13 : i64}
// CHECK: %[[ROWS:.*]] = lm.constant dense<7.000000e+00> : tensor<f32>
// CHECK: lm.lt %{{.*}}, %[[ROWS]]
// CHECK: %[[H:.*]] = lm.all_reduce
// CHECK-NEXT: %[[R:.*]] = lm.axis_index
// CHECK-NEXT: %[[BLOCK:.*]] = lm.constant dense<7.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[FIRST:.*]] = lm.mul %[[R]], %[[BLOCK]]
// CHECK-NEXT: %[[J:.*]] = lm.constant dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<7xf32>
// CHECK-NEXT: %[[CLASS:.*]] = lm.add %[[J]], %[[FIRST]] : (tensor<7xf32>, tensor<f32>) -> tensor<7xf32>
// CHECK-NEXT: %[[V:.*]] = lm.constant dense<1.300000e+01> : tensor<f32>
// CHECK-NEXT: %[[PAD:.*]] = lm.ge %[[CLASS]], %[[V]]
// CHECK-NEXT: %[[NINF:.*]] = lm.constant dense<0xFF800000> : tensor<f32>
// CHECK-NEXT: %[[ZERO:.*]] = lm.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[MASK:.*]] = lm.where %[[PAD]], %[[NINF]], %[[ZERO]] : (tensor<7xf32>, tensor<f32>, tensor<f32>) -> tensor<7xf32>
// CHECK-NEXT: %[[BM:.*]] = lm.add %[[B]], %[[MASK]] : (tensor<7xf32>, tensor<7xf32>) -> tensor<7xf32>
// CHECK-NEXT: lm.linear_cross_entropy_stats %[[H]], %[[W]], %[[T]], %[[FIRST]], %[[BM]] {chunk_rows = 6 : i64, transpose_rhs = true, vocab = 13 : i64} : (tensor<2x3x8xf32>, tensor<7x8xf32>, tensor<2x3xi32>, tensor<f32>, tensor<7xf32>)
// CHECK: lm.linear_cross_entropy_stats %[[H]], %[[W]], %[[T]], %{{.*}}, %{{.*}} {chunk_rows = 6 : i64, transpose_rhs = true, vocab = 13 : i64}
// The accuracy's classes past every rank's count as the vocabulary's size.
// CHECK: lm.constant dense<1.300000e+01> : tensor<f32>
// CHECK-NEXT: lm.where %{{.*}} : (tensor<2x6xf32>, tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
// CHECK-LABEL: func.func @padded_forward(
// CHECK: %[[L:.*]] = lm.add %{{.*}} : (tensor<1x3x7xf32>, tensor<7xf32>) -> tensor<1x3x7xf32>
// CHECK-NEXT: %[[ALL:.*]] = lm.all_gather %[[L]] {dim = 2 : i64, group_size = 2 : i64, mesh_axis = 1 : i64} : (tensor<1x3x7xf32>) -> tensor<1x3x14xf32>
// CHECK-NEXT: %[[OUT:.*]] = lm.slice %[[ALL]] {limit = array<i64: 1, 3, 13>, start = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<1x3x14xf32>) -> tensor<1x3x13xf32>
// CHECK-NEXT: return %[[OUT]]
// The train step: the stats op's VJP takes the masked bias, and the gradients of the
// rank's block (its padding row and entry are zero: dz is 0 there) are halved.
// STEP-LABEL: func.func @padded_train_step(
// STEP: %{{.*}}, %[[DW:.*]], %[[DB:.*]] = lm.linear_cross_entropy_stats_grad {{.*}} -> (tensor<2x3x8xf32>, tensor<7x8xf32>, tensor<7xf32>)
// STEP: lm.mul %[[DB]], %{{.*}} : (tensor<7xf32>, tensor<f32>) -> tensor<7xf32>
// STEP: return
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @padded(%wte: tensor<13x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                    %b: tensor<13xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                    %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 13 : i64},
                    %t: tensor<2x3xi32> {lm.input = "t", lm.vocab = 13 : i64}) -> (tensor<f32>, tensor<f32> {lm.metric = "accuracy"})
      attributes {lm.objective} {
    %h = lm.embedding %wte, %ids : (tensor<13x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %l = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<2x3x8xf32>, tensor<13x8xf32>) -> tensor<2x3x13xf32>
    %lb = lm.add %l, %b : (tensor<2x3x13xf32>, tensor<13xf32>) -> tensor<2x3x13xf32>
    %c = lm.cross_entropy %lb, %t : (tensor<2x3x13xf32>, tensor<2x3xi32>) -> tensor<f32>
    %a = lm.accuracy %lb, %t : (tensor<2x3x13xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %c, %a : tensor<f32>, tensor<f32>
  }
  func.func @padded_forward(%wte: tensor<13x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                            %b: tensor<13xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                            %ids: tensor<1x3xi32> {lm.input = "ids", lm.vocab = 13 : i64}) -> tensor<1x3x13xf32>
      attributes {lm.model} {
    %h = lm.embedding %wte, %ids : (tensor<13x8xf32>, tensor<1x3xi32>) -> tensor<1x3x8xf32>
    %l = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<1x3x8xf32>, tensor<13x8xf32>) -> tensor<1x3x13xf32>
    %lb = lm.add %l, %b : (tensor<1x3x13xf32>, tensor<13xf32>) -> tensor<1x3x13xf32>
    return %lb : tensor<1x3x13xf32>
  }
}

// -----

// An untied head [d, V] pads its columns alike; without a bias the mask alone is the
// stats op's bias.
// CHECK-LABEL: func.func @padded_untied(
// CHECK-SAME: tensor<8x7xf32> {lm.init = {kind = "zeros"}, lm.param = "head", lm.sharding = {logical_size = 13 : i64, split_axes = {{\[\[}}], [1]]}}
// CHECK: %[[MASK:.*]] = lm.where %{{.*}} : (tensor<7xf32>, tensor<f32>, tensor<f32>) -> tensor<7xf32>
// CHECK-NEXT: lm.linear_cross_entropy_stats %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]] {chunk_rows = 6 : i64, vocab = 13 : i64}
module attributes {lm.mesh = {data = 1 : i64, tensor = 2 : i64}} {
  func.func @padded_untied(%embed: tensor<13x8xf32> {lm.param = "embed", lm.init = {kind = "zeros"}},
                           %head: tensor<8x13xf32> {lm.param = "head", lm.init = {kind = "zeros"}},
                           %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 13 : i64},
                           %t: tensor<2x3xi32> {lm.input = "t", lm.vocab = 13 : i64}) -> tensor<f32>
      attributes {lm.objective} {
    %h = lm.embedding %embed, %ids : (tensor<13x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    %l = lm.matmul %h, %head : (tensor<2x3x8xf32>, tensor<8x13xf32>) -> tensor<2x3x13xf32>
    %c = lm.cross_entropy %l, %t : (tensor<2x3x13xf32>, tensor<2x3xi32>) -> tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// A vocabulary too small for the axis stays whole, with a warning: blocks of
// ceil(5 / 4) = 2 classes would leave rank 3 none.
module attributes {lm.mesh = {data = 1 : i64, tensor = 4 : i64}} {
  // expected-warning @below {{tensor parallelism: parameter 'wte' (5 rows, the vocabulary) is too small for mesh axis 'tensor' (4 ranks): blocks of ceil(5 / 4) = 2 classes leave the last rank none, so it stays whole on every rank}}
  func.func @too_small(%wte: tensor<5x8xf32> {lm.param = "wte", lm.init = {kind = "zeros"}},
                       %ids: tensor<2x3xi32> {lm.input = "ids", lm.vocab = 5 : i64}) -> tensor<2x3x8xf32>
      attributes {lm.model} {
    %a = lm.embedding %wte, %ids : (tensor<5x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
    return %a : tensor<2x3x8xf32>
  }
}

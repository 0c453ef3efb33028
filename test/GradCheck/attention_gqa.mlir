// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.attention with grouped-query heads (4 query heads over 2 key/value heads).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%q: tensor<2x4x8xf64> {lm.param = "q", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %k: tensor<2x4x4xf64> {lm.param = "k", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %v: tensor<2x4x4xf64> {lm.param = "v", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %y = lm.attention %q, %k, %v {causal = false, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x4x8xf64>, tensor<2x4x4xf64>, tensor<2x4x4xf64>) -> tensor<2x4x8xf64>
  %w = lm.constant dense<[[[-0.505, -1.513, -1.667, 0.538, 0.743, -0.819, 0.958, -1.536], [1.684, -1.106, 1.434, 1.184, -1.098, -0.467, -0.418, -0.767], [-1.301, -0.312, -1.296, -0.349, 0.549, -1.570, 0.411, -0.555], [-0.302, -1.488, 0.966, -0.397, -0.692, 0.886, -0.776, 0.323]], [[1.616, 1.527, -1.434, -0.905, -0.770, -1.057, -1.322, -1.112], [0.506, -1.035, 1.393, -0.257, 0.394, -1.701, 1.686, 1.117], [-0.676, -1.657, -0.997, -1.658, -0.985, -1.192, 0.393, 1.588], [-0.883, -0.808, 0.645, -0.819, -1.666, -1.047, -0.773, 1.033]]]> : tensor<2x4x8xf64>
  %m = lm.mul %y, %w : (tensor<2x4x8xf64>, tensor<2x4x8xf64>) -> tensor<2x4x8xf64>
  %l = lm.sum_to %m : (tensor<2x4x8xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.biased_attention as T5 uses it: a bias [1, H, T, T] that is
// a parameter (its gradient sums the score gradients over the batch rows), no
// 1/sqrt(Dh) scaling (scale = 1), and segment ids packing two documents into
// batch row 0 (tokens 0-2 and 3-4) and three into row 1; no padding mask.
// The plan's gradients (q, k, v and the bias) are compared with central finite
// differences in f64; the loss weights every output element by a different
// constant. The segments are data: no gradient.
func.func @loss(%q: tensor<2x5x6xf64> {lm.param = "q", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %k: tensor<2x5x6xf64> {lm.param = "k", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %v: tensor<2x5x6xf64> {lm.param = "v", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b: tensor<1x2x5x5xf64> {lm.param = "b", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %m = lm.constant dense<1.0> : tensor<f64>
  %s = lm.constant dense<[[0, 0, 0, 1, 1], [4, 4, 7, 7, 9]]> : tensor<2x5xi32>
  %n = lm.constant dense<0> : tensor<i32>
  %1 = lm.biased_attention %q, %k, %v, %m, %b, %s, %n {num_heads = 2 : i64, scale = 1.0 : f64} : (tensor<2x5x6xf64>, tensor<2x5x6xf64>, tensor<2x5x6xf64>, tensor<f64>, tensor<1x2x5x5xf64>, tensor<2x5xi32>, tensor<i32>) -> tensor<2x5x6xf64>
  %2 = lm.constant dense<[[[-0.564, -1.117, 0.483, -1.368, 0.115, -0.430], [-1.414, 0.024, -1.480, -0.212, -1.376, -1.310], [-0.242, 1.046, -1.204, -0.886, 0.408, 1.433], [0.247, -0.331, 1.524, -1.451, 1.147, -0.673], [-1.138, -1.223, -0.613, 1.012, -1.022, 0.261]], [[0.445, -0.408, 0.153, -1.399, -1.409, -0.941], [0.577, -0.232, -0.595, 0.274, -0.150, -0.641], [0.942, 0.637, -0.819, 0.238, 0.081, 1.200], [0.734, -0.679, 1.537, -1.222, -0.262, 0.823], [-1.114, -0.035, -1.475, 0.538, 0.847, 0.234]]]> : tensor<2x5x6xf64>
  %3 = lm.mul %1, %2 : (tensor<2x5x6xf64>, tensor<2x5x6xf64>) -> tensor<2x5x6xf64>
  %4 = lm.sum_to %3 : (tensor<2x5x6xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

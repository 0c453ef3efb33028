// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.biased_attention with an ALiBi-shaped bias [1, H, 1, Tk]
// (one number a head and key, broadcast over batch rows and queries: its gradient
// sums over both), causal, a key padding mask (row 1 pads its last key), grouped
// query heads (4 query heads over 2 key/value heads) and the default scale.
func.func @loss(%q: tensor<2x5x8xf64> {lm.param = "q", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %k: tensor<2x5x4xf64> {lm.param = "k", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %v: tensor<2x5x4xf64> {lm.param = "v", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b: tensor<1x4x1x5xf64> {lm.param = "b", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %m = lm.constant dense<[[1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 0.0]]> : tensor<2x5xf64>
  %s = lm.constant dense<0> : tensor<i32>
  %1 = lm.biased_attention %q, %k, %v, %m, %b, %s, %s {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x5x8xf64>, tensor<2x5x4xf64>, tensor<2x5x4xf64>, tensor<2x5xf64>, tensor<1x4x1x5xf64>, tensor<i32>, tensor<i32>) -> tensor<2x5x8xf64>
  %2 = lm.constant dense<[[[1.202, -0.596, 0.625, 0.302, 0.256, -0.140, 1.088, 1.423], [-0.083, 0.525, -1.406, 0.645, 0.471, 1.578, 1.030, -0.689], [-0.365, 0.540, -1.528, -0.123, -1.062, -1.225, -1.411, 0.858], [-1.186, -0.808, -0.349, 1.189, -1.342, -0.163, 0.158, 1.227], [1.022, 1.165, -0.709, -0.271, -0.452, 1.229, 1.465, -1.117]], [[-1.036, -0.858, -0.853, -0.048, 0.285, -0.759, -1.587, -0.259], [-0.418, 0.212, 1.450, 0.610, 0.050, 0.376, 0.564, -1.427], [1.279, 0.896, 1.198, 0.953, -0.344, -0.323, -1.269, 0.430], [-1.401, -1.384, -0.932, -1.081, -0.512, -1.432, -1.599, -1.116], [-1.275, -0.436, -1.518, 1.198, 0.365, -1.125, -0.793, -0.488]]]> : tensor<2x5x8xf64>
  %3 = lm.mul %1, %2 : (tensor<2x5x8xf64>, tensor<2x5x8xf64>) -> tensor<2x5x8xf64>
  %4 = lm.sum_to %3 : (tensor<2x5x8xf64>) -> tensor<f64>
  return %4 : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of the comparisons lm.gt, ge, lt, le, eq, ne (no gradient through a mask).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%x: tensor<2x3x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %c = lm.constant dense<0.25> : tensor<f64>
  %k0 = lm.gt %x, %c : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %p0 = lm.mul %x, %k0 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %a0 = lm.add %x, %p0 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %k1 = lm.ge %x, %c : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %p1 = lm.mul %x, %k1 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %a1 = lm.add %a0, %p1 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %k2 = lm.lt %x, %c : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %p2 = lm.mul %x, %k2 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %a2 = lm.add %a1, %p2 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %k3 = lm.le %x, %c : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %p3 = lm.mul %x, %k3 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %a3 = lm.add %a2, %p3 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %k4 = lm.eq %x, %c : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %p4 = lm.mul %x, %k4 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %a4 = lm.add %a3, %p4 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %k5 = lm.ne %x, %c : (tensor<2x3x5xf64>, tensor<f64>) -> tensor<2x3x5xf64>
  %p5 = lm.mul %x, %k5 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %a5 = lm.add %a4, %p5 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %y = lm.mul %a5, %x : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %w = lm.constant dense<[[[-1.425, -0.482, -1.662, 0.378, -0.252], [-0.599, -1.218, 1.694, 1.042, 1.298], [-0.399, 1.037, -0.832, -1.436, -0.266]], [[1.745, 1.688, -0.963, -1.071, -1.691], [0.333, -0.997, 0.372, -1.251, 0.590], [-1.294, 0.793, 0.547, 1.359, -0.558]]]> : tensor<2x3x5xf64>
  %m = lm.mul %y, %w : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %l = lm.sum_to %m : (tensor<2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

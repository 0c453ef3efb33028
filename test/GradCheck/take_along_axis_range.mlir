// RUN: lmc compile %s -o %t.plan
// RUN: not lmrt gradcheck %t.plan 2>&1 | FileCheck %s
// CHECK: take_along_axis: index 5 at flat position 2 is outside the axis [0, 5)

// Tests that an index outside the gathered axis is a runtime error that names
// the op, the index and where it is, not an out-of-bounds read (the frontend
// rejects constant indices at compile time; IR written by hand reaches lmrt).
func.func @loss(%x: tensor<2x5xf64> {lm.param = "x", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %i = lm.constant dense<[[0, 4, 5]]> : tensor<1x3xi32>
  %y = lm.take_along_axis %x, %i {axis = 1 : i64} : (tensor<2x5xf64>, tensor<1x3xi32>) -> tensor<2x3xf64>
  %l = lm.sum_to %y : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of batched lm.matmul in all four transpose variants.
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%a0: tensor<2x3x4xf64> {lm.param = "a0", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b0: tensor<2x4x5xf64> {lm.param = "b0", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %a1: tensor<2x4x3xf64> {lm.param = "a1", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b1: tensor<2x4x5xf64> {lm.param = "b1", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %a2: tensor<2x3x4xf64> {lm.param = "a2", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b2: tensor<2x5x4xf64> {lm.param = "b2", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %a3: tensor<2x4x3xf64> {lm.param = "a3", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %b3: tensor<2x5x4xf64> {lm.param = "b3", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.matmul %a0, %b0 : (tensor<2x3x4xf64>, tensor<2x4x5xf64>) -> tensor<2x3x5xf64>
  %2 = lm.constant dense<[[[-0.358, 0.379, 0.545, -1.598, 1.074], [0.983, -0.814, 0.400, 0.930, -0.713], [0.816, 0.434, -1.668, 1.438, 0.901]], [[-1.098, 0.282, 1.690, -0.489, 0.774], [1.373, -1.330, 1.498, 0.525, -1.298], [0.328, 1.737, -0.296, 0.491, 1.742]]]> : tensor<2x3x5xf64>
  %3 = lm.mul %1, %2 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %4 = lm.sum_to %3 : (tensor<2x3x5xf64>) -> tensor<f64>
  %5 = lm.matmul %a1, %b1 {transpose_lhs = true} : (tensor<2x4x3xf64>, tensor<2x4x5xf64>) -> tensor<2x3x5xf64>
  %6 = lm.constant dense<[[[-1.265, 0.309, 0.612, -1.209, 0.487], [1.614, -0.908, 1.543, 0.997, -0.495], [1.421, 0.256, -1.445, 0.690, 0.445]], [[-0.577, 0.925, 0.615, -1.362, 1.321], [0.673, -0.564, 1.258, 1.150, -1.571], [0.572, 0.450, -1.087, 1.731, 0.897]]]> : tensor<2x3x5xf64>
  %7 = lm.mul %5, %6 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %8 = lm.sum_to %7 : (tensor<2x3x5xf64>) -> tensor<f64>
  %9 = lm.matmul %a2, %b2 {transpose_rhs = true} : (tensor<2x3x4xf64>, tensor<2x5x4xf64>) -> tensor<2x3x5xf64>
  %10 = lm.constant dense<[[[-0.817, 0.341, 0.678, -1.338, 0.583], [0.778, -0.886, 0.820, 1.433, -1.619], [1.196, 0.965, -1.105, 1.185, 1.373]], [[-1.602, 0.856, 0.777, -0.325, 0.906], [0.931, -0.507, 1.232, 1.633, -1.435], [1.674, 1.633, -1.649, 1.241, 0.997]]]> : tensor<2x3x5xf64>
  %11 = lm.mul %9, %10 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %12 = lm.sum_to %11 : (tensor<2x3x5xf64>) -> tensor<f64>
  %13 = lm.matmul %a3, %b3 {transpose_lhs = true, transpose_rhs = true} : (tensor<2x4x3xf64>, tensor<2x5x4xf64>) -> tensor<2x3x5xf64>
  %14 = lm.constant dense<[[[-1.196, 1.706, 0.334, -0.293, 0.726], [1.165, -1.225, 0.427, 1.146, -1.129], [1.322, 1.607, -1.486, 0.671, 0.407]], [[-1.363, 1.634, 1.136, -1.611, 0.268], [1.370, -1.194, 1.513, 0.755, -1.454], [0.617, 0.271, -1.590, 1.269, 1.467]]]> : tensor<2x3x5xf64>
  %15 = lm.mul %13, %14 : (tensor<2x3x5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %16 = lm.sum_to %15 : (tensor<2x3x5xf64>) -> tensor<f64>
  %17 = lm.add %4, %8 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %18 = lm.add %17, %12 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %19 = lm.add %18, %16 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %19 : tensor<f64>
}

// RUN: lmc compile %s -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// RUN: lmc compile %s --fusion=none -o %t.ref.plan
// RUN: lmrt gradcheck %t.ref.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJP of lm.matmul with a rank-2 rhs shared by a rank-4 lhs (all
// four transpose variants; the rhs gradient sums over the batch).
// The plan's gradients are compared with central finite differences in f64;
// the loss weights every output element by a different constant, so a wrong
// gradient anywhere changes the result.
func.func @loss(%a0: tensor<2x2x3x4xf64> {lm.param = "a0", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %w0: tensor<4x5xf64> {lm.param = "w0", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %a1: tensor<2x2x4x3xf64> {lm.param = "a1", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %w1: tensor<4x5xf64> {lm.param = "w1", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %a2: tensor<2x2x3x4xf64> {lm.param = "a2", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %w2: tensor<5x4xf64> {lm.param = "w2", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %a3: tensor<2x2x4x3xf64> {lm.param = "a3", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}},
                %w3: tensor<5x4xf64> {lm.param = "w3", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %1 = lm.matmul %a0, %w0 : (tensor<2x2x3x4xf64>, tensor<4x5xf64>) -> tensor<2x2x3x5xf64>
  %2 = lm.constant dense<[[[[-0.415, 0.333, 0.295, -0.661, 1.196], [0.367, -0.934, 1.615, 0.632, -0.325], [0.437, 1.406, -1.640, 1.486, 0.962]], [[-0.674, 1.395, 0.478, -1.523, 1.706], [0.810, -1.357, 0.845, 1.406, -1.272], [0.897, 0.391, -1.611, 1.528, 0.663]]], [[[-0.580, 1.441, 0.861, -1.199, 0.460], [1.657, -0.448, 0.412, 1.345, -0.716], [1.538, 0.971, -0.692, 0.471, 1.341]], [[-0.808, 0.732, 1.241, -0.274, 1.546], [1.606, -1.183, 0.442, 1.432, -0.550], [0.672, 1.512, -1.596, 1.359, 1.159]]]]> : tensor<2x2x3x5xf64>
  %3 = lm.mul %1, %2 : (tensor<2x2x3x5xf64>, tensor<2x2x3x5xf64>) -> tensor<2x2x3x5xf64>
  %4 = lm.sum_to %3 : (tensor<2x2x3x5xf64>) -> tensor<f64>
  %5 = lm.matmul %a1, %w1 {transpose_lhs = true} : (tensor<2x2x4x3xf64>, tensor<4x5xf64>) -> tensor<2x2x3x5xf64>
  %6 = lm.constant dense<[[[[-0.855, 1.236, 1.683, -0.688, 1.105], [1.526, -1.387, 1.040, 0.525, -1.352], [1.016, 1.698, -0.817, 1.689, 0.613]], [[-1.595, 0.273, 1.706, -0.919, 0.343], [0.893, -0.415, 0.712, 0.389, -0.389], [0.456, 1.299, -0.323, 0.679, 0.842]]], [[[-1.442, 0.260, 0.793, -0.731, 1.209], [0.530, -1.315, 1.073, 1.038, -1.108], [0.253, 0.690, -1.021, 0.996, 1.487]], [[-0.635, 1.665, 0.505, -0.670, 1.391], [0.665, -1.150, 1.241, 0.756, -0.435], [1.602, 1.423, -0.973, 1.426, 0.896]]]]> : tensor<2x2x3x5xf64>
  %7 = lm.mul %5, %6 : (tensor<2x2x3x5xf64>, tensor<2x2x3x5xf64>) -> tensor<2x2x3x5xf64>
  %8 = lm.sum_to %7 : (tensor<2x2x3x5xf64>) -> tensor<f64>
  %9 = lm.matmul %a2, %w2 {transpose_rhs = true} : (tensor<2x2x3x4xf64>, tensor<5x4xf64>) -> tensor<2x2x3x5xf64>
  %10 = lm.constant dense<[[[[-0.359, 1.452, 0.489, -1.366, 0.275], [0.647, -0.806, 1.491, 0.301, -1.427], [1.641, 1.116, -0.851, 1.509, 1.448]], [[-1.747, 0.703, 0.789, -0.579, 0.377], [1.161, -1.152, 1.123, 1.539, -0.946], [0.572, 0.635, -1.049, 0.705, 0.602]]], [[[-1.275, 0.629, 0.779, -0.572, 1.114], [0.881, -0.623, 0.563, 1.137, -0.297], [1.511, 1.505, -0.689, 0.267, 1.424]], [[-0.468, 1.404, 0.292, -0.262, 0.963], [1.354, -1.344, 1.263, 0.355, -0.965], [1.589, 1.278, -1.192, 0.939, 0.913]]]]> : tensor<2x2x3x5xf64>
  %11 = lm.mul %9, %10 : (tensor<2x2x3x5xf64>, tensor<2x2x3x5xf64>) -> tensor<2x2x3x5xf64>
  %12 = lm.sum_to %11 : (tensor<2x2x3x5xf64>) -> tensor<f64>
  %13 = lm.matmul %a3, %w3 {transpose_lhs = true, transpose_rhs = true} : (tensor<2x2x4x3xf64>, tensor<5x4xf64>) -> tensor<2x2x3x5xf64>
  %14 = lm.constant dense<[[[[-0.788, 1.044, 1.710, -1.465, 0.806], [1.678, -1.198, 1.165, 1.050, -1.133], [0.381, 0.379, -1.036, 0.551, 1.442]], [[-0.722, 0.472, 1.305, -0.506, 1.174], [0.602, -0.295, 0.251, 0.491, -1.384], [0.945, 0.878, -0.581, 0.647, 1.274]]], [[[-0.739, 0.330, 0.616, -0.575, 1.108], [1.549, -0.948, 1.070, 1.385, -1.527], [1.659, 1.093, -1.733, 1.371, 1.106]], [[-1.135, 0.922, 1.591, -0.384, 1.337], [0.392, -0.640, 0.802, 1.250, -0.799], [0.854, 1.324, -1.446, 0.565, 1.501]]]]> : tensor<2x2x3x5xf64>
  %15 = lm.mul %13, %14 : (tensor<2x2x3x5xf64>, tensor<2x2x3x5xf64>) -> tensor<2x2x3x5xf64>
  %16 = lm.sum_to %15 : (tensor<2x2x3x5xf64>) -> tensor<f64>
  %17 = lm.add %4, %8 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %18 = lm.add %17, %12 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %19 = lm.add %18, %16 : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %19 : tensor<f64>
}

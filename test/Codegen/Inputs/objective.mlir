// An objective only: lmc runs the train pipeline (-lm-autodiff) to add its train step.
module {
  func.func @tiny(%w: tensor<4x3xf32> {lm.param = "w", lm.init = {kind = "normal", mean = 0.0 : f64, std = 2.000000e-02 : f64}},
                  %b: tensor<3xf32> {lm.param = "b", lm.init = {kind = "zeros"}},
                  %x: tensor<2x4xf32> {lm.input = "x"},
                  %t: tensor<2xi32> {lm.input = "targets", lm.vocab = 3 : i64}) -> tensor<f32> attributes {lm.objective} {
    %y = lm.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %z = lm.add %y, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %l = lm.cross_entropy %z, %t : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

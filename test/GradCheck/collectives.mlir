// RUN: lmc compile %s --fusion=none -o %t.plan
// RUN: lmrt gradcheck %t.plan | FileCheck %s
// CHECK: gradcheck: ok

// Tests the VJPs of lm.all_reduce (sum and mean), lm.reduce_scatter and
// lm.all_gather in one process (groups of one rank: each collective is the
// identity, its adjoint the identity). The loss weights every element by a
// different constant, so a gradient routed to the wrong element, or scaled, fails.
// Across ranks the adjoints are pinned by test/Transforms/autodiff-collectives.mlir
// and the collectives' arithmetic by lmrt_comm_test under mpirun.
func.func @loss(%a: tensor<2x3xf64> {lm.param = "a", lm.init = {kind = "normal", mean = 0.0 : f64, std = 1.0 : f64}}) -> tensor<f64>
    attributes {lm.objective} {
  %0 = lm.all_reduce %a {mesh_axis = 0 : i64, group_size = 1 : i64} : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %1 = lm.all_reduce %0 {mesh_axis = 0 : i64, group_size = 1 : i64, mean = true} : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %2 = lm.all_gather %1 {mesh_axis = 0 : i64, group_size = 1 : i64, dim = 1 : i64} : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %3 = lm.reduce_scatter %2 {mesh_axis = 0 : i64, group_size = 1 : i64, dim = 0 : i64} : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %4 = lm.mul %3, %3 : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %c = lm.constant dense<[[-0.438, 1.162, 1.074], [0.845, -1.498, 1.178]]> : tensor<2x3xf64>
  %5 = lm.mul %4, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %6 = lm.sum_to %5 : (tensor<2x3xf64>) -> tensor<f64>
  return %6 : tensor<f64>
}

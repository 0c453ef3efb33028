// Tests that the plan writer holds a hand-written module's lm.train to the
// bounds of the train settings' table (contract/train_settings.h), naming
// the module attribute's key where the plan's field differs (warmup, the
// plan's warmup_steps); and that a module without lm.train gets the table's
// defaults, with no weight decay (plans of such test modules predate it).
// RUN: split-file --leading-lines %s %t
// RUN: not lmc compile %t/warmup.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=WARMUP
// RUN: not lmc compile %t/cooldown.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=COOLDOWN
// RUN: not lmc compile %t/accumulate.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=ACCUMULATE
// RUN: not lmc compile %t/clip.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: not ls %t/bad.plan
// RUN: lmc compile %t/bare.mlir --fusion=none --emit=plan-text 2> /dev/null | FileCheck %s --check-prefix=BARE
// BARE:      train {
// BARE-NEXT:   optimizer {
// BARE-NEXT:     kind: "adamw"
// BARE-NEXT:     lr: 0.001
// BARE-NEXT:     beta1: 0.9
// BARE-NEXT:     beta2: 0.999
// BARE-NEXT:     eps: 1e-08
// BARE-NEXT:   }
// BARE-NEXT:   schedule {
// BARE-NEXT:     kind: "constant"
// BARE-NEXT:   }
// BARE-NEXT: }

//--- warmup.mlir
// WARMUP: warmup.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.warmup = -1 must be >= 0
module attributes {lm.train = {schedule = "cosine", warmup = -1 : i64}} {
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- cooldown.mlir
// COOLDOWN: cooldown.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.cooldown_fraction = 1.5 must be in (0, 1] for a wsd schedule
module attributes {lm.train = {schedule = "wsd", cooldown_fraction = 1.5 : f64}} {
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- accumulate.mlir
// ACCUMULATE: accumulate.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.accumulate = 1048577 must be in [1, 1048576]
module attributes {lm.train = {accumulate = 1048577 : i64}} {
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- clip.mlir
// CLIP: clip.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.clip_grad_norm = -1 must be finite and >= 0 (0: off)
module attributes {lm.train = {clip_grad_norm = -1.0 : f64}} {
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- bare.mlir
module {
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

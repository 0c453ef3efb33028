// Tests that modules breaking the plan contract are rejected with an error at
// the offending op or argument (file:line:col, then the source line and a
// caret), exit status 1, and no plan file.
// RUN: split-file --leading-lines %s %t
// RUN: not lmc compile %t/no-objective.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=NOOBJ
// RUN: not lmc compile %t/no-kernel.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=NOKERNEL
// RUN: not lmc compile %t/dynamic.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// RUN: not lmc compile %t/dtype.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not lmc compile %t/unannotated.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=UNANNOTATED
// RUN: not lmc compile %t/missing-grad.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=MISSINGGRAD
// RUN: not lmc compile %t/two-objectives.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=TWOOBJ
// RUN: not lmc compile %t/bad-init.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=BADINIT
// RUN: not lmc compile %t/bad-train.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=BADTRAIN
// RUN: not lmc compile %t/param-mismatch.mlir -o %t/a.plan 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not lmc memory-plan %t/a.plan 2>&1 | FileCheck %s --check-prefix=NOPLAN
// NOPLAN: lmc: error: cannot open plan {{.*}}a.plan{{.*}}: No such file or directory

//--- no-objective.mlir
// NOOBJ: no-objective.mlir:[[@LINE+1]]:1: error: plan contract: no objective (a func.func with the lm.objective attribute)
module {
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
}

//--- no-kernel.mlir
module {
  func.func private @helper(tensor<2xf32>) -> tensor<f32>
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    // NOKERNEL: no-kernel.mlir:[[@LINE+3]]:10: error: plan contract: 'func.call' has no runtime kernel; a plan runs lm ops only
    // NOKERNEL-NEXT: %l = call @helper(%p)
    // NOKERNEL-NEXT: ^
    %l = call @helper(%p) : (tensor<2xf32>) -> tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
}

//--- dynamic.mlir
module {
  // DYNAMIC: dynamic.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #1 of @f_train_step has type 'tensor<?x4xi32>' with a dynamic dimension; plans need static shapes
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %ids: tensor<?x4xi32> {lm.input = "ids"})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- dtype.mlir
module {
  // DTYPE: dtype.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #1 of @f_train_step has element type 'i64'; the runtime supports f32, f64, i32, bf16 and f16
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %ids: tensor<4xi64> {lm.input = "ids"})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- unannotated.mlir
module {
  // UNANNOTATED: unannotated.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #1 of @f_train_step has neither lm.param nor lm.input; the runtime cannot fill it
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %q: tensor<2xf32>)
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- missing-grad.mlir
module {
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}},
                          %q: tensor<3xf32> {lm.param = "q", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    // MISSINGGRAD: missing-grad.mlir:[[@LINE+1]]:5: error: plan contract: @f_train_step returns no gradient for parameter 'q' (an lm.grad_of result)
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- two-objectives.mlir
module {
  // TWOOBJ: two-objectives.mlir:[[@LINE+6]]:3: error: plan contract: more than one function carries lm.objective (@f and @g); a plan holds one of each program
  // TWOOBJ: two-objectives.mlir:[[@LINE+1]]:3: note: the first one is here
  func.func @f() -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @g() -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @f_train_step() -> tensor<f32> attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- bad-init.mlir
module {
  // BADINIT: bad-init.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #0 of @f_train_step has unknown initialiser kind 'xavier' (expected zeros, ones, normal, uniform, blocks or orthogonal)
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "xavier"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- bad-train.mlir
// BADTRAIN: bad-train.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.lr must be a number, got "fast"
module attributes {lm.train = {lr = "fast"}} {
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

//--- param-mismatch.mlir
module {
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  // MISMATCH: param-mismatch.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #0 of @f is parameter 'p' of type 'tensor<3xf32>', which differs from its type in the train step
  func.func @f(%p: tensor<3xf32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

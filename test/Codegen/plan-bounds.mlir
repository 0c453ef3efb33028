// Tests that lmc writes only plans that lmrt's validation
// (runtime/exec/validate.cpp) accepts: every value the runtime would reject is
// an error at the argument or module it comes from, with the same bounds
// (parameter dtype and initialiser, lm.vocab, lm.train, a complete lm.data
// whose token inputs match it, float logits, tensor sizes); that a step carries
// only its op's inherent attributes, not discardable ones; that a module with
// a train step still goes through the optimize and contract stages (which
// --print-ir-after-all shows); and that
// `lmc memory-plan` tells a plan file from protobuf text by its magic, not by
// its name.
// RUN: split-file --leading-lines %s %t
// RUN: not lmc compile %t/i32-param.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=I32PARAM
// RUN: not lmc compile %t/normal-std.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=NORMALSTD
// RUN: not lmc compile %t/normal-nan.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=NORMALNAN
// RUN: not lmc compile %t/uniform-order.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=UNIFORM
// RUN: not lmc compile %t/vocab-f32.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=VOCABF32
// RUN: not lmc compile %t/vocab-zero.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=VOCABZERO
// RUN: not lmc compile %t/overflow.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not lmc compile %t/too-large.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=TOOLARGE
// RUN: not lmc compile %t/negative-lr.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not lmc compile %t/linear.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=LINEAR
// RUN: not lmc compile %t/rmsprop.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=RMSPROP
// RUN: not lmc compile %t/min-lr.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=MINLR
// RUN: not lmc compile %t/beta.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not lmc compile %t/partial-data.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=PARTIAL
// RUN: not lmc compile %t/zero-batch.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=ZEROBATCH
// RUN: not lmc compile %t/data-shape.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=DATASHAPE
// RUN: not lmc compile %t/data-vocab.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=DATAVOCAB
// RUN: not lmc compile %t/int-logits.mlir -o %t/bad.plan 2>&1 | FileCheck %s --check-prefix=LOGITS
// RUN: not ls %t/bad.plan

// A valid module: discardable attributes on its steps stay out of the plan
// (a dictionary would have no plan form at all), the data config is complete,
// and lmrt accepts the plan.
// RUN: lmc compile %t/valid.mlir --fusion=none -o %t/valid.bin --emit=plan-text | FileCheck %s --check-prefix=VALID
// RUN: lmrt inspect %t/valid.bin | FileCheck %s --check-prefix=INSPECT
// VALID:     op: "gelu"
// VALID-NOT: note
// VALID:     op: "gelu"
// VALID-NOT: note
// VALID:     data {
// VALID-NEXT:  transform: "causal"
// VALID-NEXT:  batch: 2
// VALID-NEXT:  seq: 1
// VALID-NEXT:  vocab: 3
// VALID-NEXT: }
// INSPECT: train_step

// A module with a train step skips autodiff only: --print-ir-after-all shows
// the optimize stage (with fusion) and the contract stage running.
// RUN: lmc compile %t/valid.mlir -o %t/valid.plan --print-ir-after-all 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PRINTIR --implicit-check-not=LMAutodiff --implicit-check-not=warning
// PRINTIR: IR Dump Before Canonicalizer
// PRINTIR: IR Dump Before CSE
// PRINTIR: IR Dump Before LMFusePass (lm-fuse)
// PRINTIR: IR Dump Before LMCheckPlanContractPass (lm-check-plan-contract)
// PRINTIR: lmc: wrote {{.*}}valid.plan

// `lmc memory-plan` reads a plan file by its magic whatever its name, and
// protobuf text even when it is named .plan.
// RUN: lmc memory-plan %t/valid.bin | FileCheck %s --check-prefix=READ
// RUN: lmc compile %t/valid.mlir --emit=plan-text > %t/text.plan
// RUN: lmc memory-plan %t/text.plan | FileCheck %s --check-prefix=READ
// READ: check train_step: ok
// READ: check eval: ok

//--- i32-param.mlir
module {
  // I32PARAM: i32-param.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #0 of @f_train_step is parameter 'p' of type 'tensor<2xi32>'; parameters must be f32 or f64
  func.func @f_train_step(%p: tensor<2xi32> {lm.param = "p", lm.init = {kind = "zeros"}})
      -> (tensor<f32>, tensor<2xi32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xi32>
  }
  func.func @f(%p: tensor<2xi32> {lm.param = "p", lm.init = {kind = "zeros"}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- normal-std.mlir
module {
  // NORMALSTD: normal-std.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #0 of @f_train_step has a normal lm.init with mean 0 and std -1; both must be finite and std >= 0
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "normal", std = -1.0 : f64}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "normal", std = -1.0 : f64}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- normal-nan.mlir
module {
  // NORMALNAN: normal-nan.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #0 of @f_train_step has a normal lm.init with mean nan and std 1; both must be finite and std >= 0
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "normal", mean = 0x7FF8000000000000 : f64}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "normal", mean = 0x7FF8000000000000 : f64}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- uniform-order.mlir
module {
  // UNIFORM: uniform-order.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #0 of @f_train_step has a uniform lm.init with low 1 and high -1; both must be finite and low <= high
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "uniform", low = 1.0 : f64, high = -1.0 : f64}})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "uniform", low = 1.0 : f64, high = -1.0 : f64}}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- vocab-f32.mlir
module {
  // VOCABF32: vocab-f32.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #1 of @f_train_step has lm.vocab but type 'tensor<2x2xf32>'; only i32 token ids have a vocabulary
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %x: tensor<2x2xf32> {lm.input = "x", lm.vocab = 3 : i64})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %x: tensor<2x2xf32> {lm.input = "x", lm.vocab = 3 : i64}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- vocab-zero.mlir
module {
  // VOCABZERO: vocab-zero.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #1 of @f_train_step has lm.vocab = 0 : i64; it must be a positive integer (the bound on token ids)
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %x: tensor<2x2xi32> {lm.input = "x", lm.vocab = 0 : i64})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %x: tensor<2x2xi32> {lm.input = "x", lm.vocab = 0 : i64}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- overflow.mlir
module {
  // OVERFLOW: overflow.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #1 of @f_train_step has type 'tensor<100000000000x100000000000xf32>', which is too large for the runtime (at most 2^47 elements)
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %x: tensor<100000000000x100000000000xf32> {lm.input = "x"})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %x: tensor<100000000000x100000000000xf32> {lm.input = "x"}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- too-large.mlir
module {
  // TOOLARGE: too-large.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: argument #1 of @f_train_step has type 'tensor<140737488355329xi32>', which is too large for the runtime
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %x: tensor<140737488355329xi32> {lm.input = "x"})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %x: tensor<140737488355329xi32> {lm.input = "x"}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- negative-lr.mlir
// LR: negative-lr.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.lr = -1 must be finite and >= 0
module attributes {lm.train = {lr = -1.0 : f64}} {
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

//--- linear.mlir
// LINEAR: linear.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.schedule = "step" is not supported (expected "constant", "linear", "cosine" or "wsd")
module attributes {lm.train = {schedule = "step"}} {
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

//--- rmsprop.mlir
// RMSPROP: rmsprop.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.optimizer = "rmsprop" is not supported (expected "adamw", "sgd", "lamb", "lion", "adafactor" or "adagrad")
module attributes {lm.train = {optimizer = "rmsprop"}} {
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

//--- min-lr.mlir
// MINLR: min-lr.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.min_lr = 0.01 must be in [0, lr = 0.001]
module attributes {lm.train = {lr = 1.0e-3 : f64, min_lr = 1.0e-2 : f64}} {
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

//--- beta.mlir
// BETA: beta.mlir:[[@LINE+1]]:1: error: plan contract: lm.train.beta2 = 1 must be in [0, 1)
module attributes {lm.train = {beta2 = 1.0 : f64}} {
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

//--- partial-data.mlir
// PARTIAL: partial-data.mlir:[[@LINE+1]]:1: error: plan contract: lm.data.vocab = 0 must be given and > 0
module attributes {lm.data = {batch = 2 : i64, seq = 4 : i64}} {
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

//--- zero-batch.mlir
// ZEROBATCH: zero-batch.mlir:[[@LINE+1]]:1: error: plan contract: lm.data.batch = 0 must be given and > 0
module attributes {lm.data = {batch = 0 : i64, seq = 4 : i64, vocab = 3 : i64}} {
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

//--- data-shape.mlir
module attributes {lm.data = {batch = 2 : i64, seq = 4 : i64, vocab = 3 : i64}} {
  // DATASHAPE: data-shape.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: token input 'tokens' of @f_train_step has type 'tensor<2x4xi32>', but lm.data (batch 2, seq 4) feeds it i32[2, 5]
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %tokens: tensor<2x4xi32> {lm.input = "tokens", lm.vocab = 3 : i64})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %tokens: tensor<2x4xi32> {lm.input = "tokens", lm.vocab = 3 : i64}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- data-vocab.mlir
module attributes {lm.data = {batch = 2 : i64, seq = 4 : i64, vocab = 8 : i64}} {
  // DATAVOCAB: data-vocab.mlir:[[@LINE+1]]:{{[0-9]+}}: error: plan contract: token input 'tokens' of @f_train_step accepts ids below lm.vocab = 3, but lm.data has vocab 8
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %tokens: tensor<2x5xi32> {lm.input = "tokens", lm.vocab = 3 : i64})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l, %p : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %tokens: tensor<2x5xi32> {lm.input = "tokens", lm.vocab = 3 : i64}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

//--- int-logits.mlir
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
  func.func @m(%ids: tensor<2x4xi32> {lm.input = "tokens"}) -> tensor<2x4xi32> attributes {lm.model} {
    // LOGITS: int-logits.mlir:[[@LINE+1]]:5: error: plan contract: the logits returned by @m has type 'tensor<2x4xi32>', expected a float tensor
    return %ids : tensor<2x4xi32>
  }
}

//--- valid.mlir
module attributes {lm.data = {batch = 2 : i64, seq = 1 : i64, transform = "causal", vocab = 3 : i64}} {
  func.func @f_train_step(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %tokens: tensor<2x2xi32> {lm.input = "tokens", lm.vocab = 3 : i64})
      -> (tensor<f32>, tensor<2xf32> {lm.grad_of = "p"}) attributes {lm.train_step} {
    %l = lm.constant dense<0.0> : tensor<f32>
    %n = lm.gelu %p {note = 3} : (tensor<2xf32>) -> tensor<2xf32>
    %g = lm.gelu %n {note = {nested = 1 : i64}} : (tensor<2xf32>) -> tensor<2xf32>
    return %l, %g : tensor<f32>, tensor<2xf32>
  }
  func.func @f(%p: tensor<2xf32> {lm.param = "p", lm.init = {kind = "zeros"}}, %tokens: tensor<2x2xi32> {lm.input = "tokens", lm.vocab = 3 : i64}) -> tensor<f32> attributes {lm.objective} {
    %l = lm.constant dense<0.0> : tensor<f32>
    return %l : tensor<f32>
  }
}

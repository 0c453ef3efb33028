//===- LMInterfaces.td - lm op interfaces ------------------*- tablegen -*-===//
//
// Per-op knowledge that generic passes query. The gradient interface is the
// contract between an op and `-lm-autodiff`: the pass stays generic, each
// differentiable op states its vector-Jacobian product (VJP). The rules are
// implemented apart from the ops, one file per op family, in
// dialect/IR/GradientRules/. The cost interface is what the plan writer asks
// each step for (FLOPs, bytes).
//
//===----------------------------------------------------------------------===//

#ifndef LM_INTERFACES_TD
#define LM_INTERFACES_TD

include "mlir/IR/OpBase.td"

def LM_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::lm";
  let description = [{
    A differentiable op. `buildAdjoint` emits, at the builder's insertion
    point, the ops computing the adjoint (the gradient of a scalar loss) of
    each operand from the adjoints of the results: the op's VJP. The op itself
    (with its operands and results) stays available, so rules may reuse the
    primal values, e.g. softmax's output.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the VJP. `resultGrads` has one entry per result, null where a
        result receives no gradient (it does not influence the loss); at least
        one is non-null. On success `operandGrads` holds one entry per operand,
        each of the operand's type, or null for non-differentiable operands
        (integer ids and targets). Fails, after emitting an error at the op,
        only when the op cannot be differentiated.
      }],
      "::mlir::LogicalResult", "buildAdjoint",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

def LM_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::lm";
  let description = [{
    The predicted cost of running the op's kernel once, for the plan's FLOP
    prediction (Step.flops, docs/compilation.md) and memory-traffic estimates.
    Every op that becomes a plan step states its FLOPs next to its other facts
    (dialect/IR/LMOpCosts.cpp, one section per op family): GEMMs and attention
    exactly (2 per multiply-add), elementwise, normalisation and loss ops as a
    small constant per element of the tensor they sweep, data movement as 0.
    Operand and result types are statically shaped (the verifiers ensure it).
  }];
  let methods = [
    InterfaceMethod<[{
        Floating-point operations of one run of the op's kernel.
      }],
      "int64_t", "getFlops", (ins)>,
    InterfaceMethod<[{
        Bytes the kernel reads and writes: by default every operand read once
        and every result written once (the ideal traffic; caches and the
        kernels' re-reads are not modelled).
      }],
      "int64_t", "getBytesAccessed", (ins), [{}], [{
        return ::mlir::lm::detail::operandAndResultBytes($_op);
      }]>
  ];
}

def LM_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface"> {
  let cppNamespace = "::mlir::lm";
  let description = [{
    An op computed point by point (its operands broadcast into its result):
    `-lm-fuse` may put it in a fused region, and codegen writes it into the
    generated kernel as the op's scalar form (docs/fusion.md). Ops state the
    form in their ODS definition (LM_ScalarForm, through the `scalar` of
    LM_BinaryOp / LM_UnaryOp), from which lm-tblgen also writes the
    elementwise table (contract/elementwise.h) that instantiates the op's CPU
    and CUDA kernels.
  }];
  let methods = [
    InterfaceMethod<[{
        The C++ expression of one point of the result, over the operands'
        values `$0`, `$1`, ... (of the accumulation type `A`), using the
        scalar math of contract/scalar_math.h: `$0 + $1`, `lmc::gelu($0)`.
      }],
      "::llvm::StringRef", "getScalarForm", (ins)>
  ];
}

def LM_ShardingOpInterface : OpInterface<"ShardingOpInterface"> {
  let cppNamespace = "::mlir::lm";
  let description = [{
    How a sharding of the op's operands maps to its results, for the SPMD
    partitioner (`-lm-spmd`, docs/distributed.md): the op's loops (parallel,
    reduction: a split one leaves partial sums, whole: the op needs all of
    it) and which loop each dimension of each operand and result follows
    (dialect/IR/LMSharding.h; upstream MLIR `mesh`'s iterator types and
    indexing maps). Ops state their rule in dialect/IR/ShardingRules.cpp;
    pointwise ops (their operands broadcast into the result) take the
    default.
  }];
  let methods = [
    InterfaceMethod<[{
        The op's loops and the loop of every operand and result dimension.
      }],
      "::mlir::lm::ShardingRule", "getShardingRule", (ins), [{}], [{
        return ::mlir::lm::detail::pointwiseShardingRule($_op, 0);
      }]>,
    InterfaceMethod<[{
        Rewrites the op's attributes for its per-rank form, where `loop` of
        its rule is split into `shards` blocks (attention's head counts, a
        slice's bounds). The pass has already given operands and results
        their local types. Most ops have nothing to rewrite.
      }],
      "void", "shardAttributes", (ins "int64_t":$loop, "int64_t":$shards), [{}], [{
        return;
      }]>
  ];
}

#endif // LM_INTERFACES_TD

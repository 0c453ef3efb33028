//===- LMBase.td - lm dialect base definitions -------------*- tablegen -*-===//
//
// The `lm` dialect: tensor ops (value semantics, static shapes) for training
// language models. Op semantics are specified in docs/dialect.md; the shape
// rules live in contract/shape_rules.h so that the verifiers, the
// frontend and the runtime agree.
//
//===----------------------------------------------------------------------===//

#ifndef LM_BASE_TD
#define LM_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def LM_Dialect : Dialect {
  let name = "lm";
  let cppNamespace = "::mlir::lm";
  let summary = "Tensor ops for training language models";
  let description = [{
    Graph-level ops on statically shaped builtin tensors (`f32`/`f64` floats,
    `i32` ids and targets): forward ops written by the frontend and backward
    ops emitted by `-lm-autodiff`. Every op has a CPU kernel of the same name
    in the runtime; attributes travel into the plan under the same names.
  }];
  let hasConstantMaterializer = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def LM_FloatTensor : StaticShapeTensorOf<[F32, F64]>;
def LM_IntTensor : StaticShapeTensorOf<[I32]>;
def LM_AnyTensor : StaticShapeTensorOf<[F32, F64, I32]>;
def LM_FloatScalar : RankedTensorOf<[F32, F64], [HasAnyRankOfPred<[0]>],
                                    "0-d float tensor">;
/// Reduced-precision storage (docs/mixed-precision.md): bf16 and f16 values
/// appear only where -lm-mixed-precision puts them: lm.cast results, GEMM
/// operands (lm.matmul accumulates and returns f32) and fused regions.
def LM_StorageFloatTensor : StaticShapeTensorOf<[F32, F64, BF16, F16]>;
def LM_StorageTensor : StaticShapeTensorOf<[F32, F64, I32, BF16, F16]>;

/// A DenseElementsAttr (dense or splat), the only constant payload the plan
/// writer serializes.
def LM_DenseElementsAttr : ElementsAttrBase<
    CPred<"::llvm::isa<::mlir::DenseElementsAttr>($_self)">,
    "dense elements attribute"> {
  let storageType = [{ ::mlir::DenseElementsAttr }];
  let returnType = [{ ::mlir::DenseElementsAttr }];
  let convertFromStorage = "$_self";
}

//===----------------------------------------------------------------------===//
// Dialect-wide invariants and the op base class
//===----------------------------------------------------------------------===//

/// All float operands and results of an lm op share one element type (no
/// implicit f32/f64 mixing anywhere in the dialect).
def LM_SameFloatElementType : NativeOpTrait<"SameFloatElementType"> {
  let cppNamespace = "::mlir::OpTrait::lm";
}

/// Exempts an op from LM_SameFloatElementType: it states its own rule for
/// mixing a reduced-precision storage type with f32 (lm.cast, lm.matmul,
/// lm.linear_cross_entropy[_with_grad], lm.fusion and lm.yield).
def LM_MixesFloatTypes : NativeOpTrait<"MixesFloatTypes"> {
  let cppNamespace = "::mlir::OpTrait::lm";
}

/// LM_SameFloatElementType comes first, so a mix of f32 and f64 is reported as
/// such before any shape or inferred-type check looks at the operands.
class LM_Op<string mnemonic, list<Trait> traits = []>
    : Op<LM_Dialect, mnemonic, !listconcat([LM_SameFloatElementType], traits)>;

#endif // LM_BASE_TD

//===- LMOps.td - lm dialect ops ---------------------------*- tablegen -*-===//
//
// Every op of docs/dialect.md. Shapes are checked by the verifiers through
// the shared rules of contract/shape_rules.h; element types by the
// operand constraints and the dialect-wide LM_SameFloatElementType trait.
// Differentiable forward ops implement LM_GradientOpInterface; their rules
// live in GradientRules/.
//
//===----------------------------------------------------------------------===//

#ifndef LM_OPS_TD
#define LM_OPS_TD

include "dialect/IR/LMBase.td"
include "dialect/IR/LMInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// The result types of an op follow from its operands and attributes through
/// the shared shape rules (contract/shape_rules.h): inferReturnTypes
/// (LMOps.cpp) calls the rule, so ODS generates builders without result types
/// and no caller computes them. LM_ResultsMatchInferred, verified before the
/// interface's generic check, compares each result with the inferred type and
/// says which dimension is off. Ops whose result shape is chosen by the caller
/// (reshape, sum_to, embedding_grad, slice_grad) keep explicit result types.
def LM_ResultsMatchInferred : NativeOpTrait<"ResultsMatchInferred"> {
  let cppNamespace = "::mlir::OpTrait::lm";
}
defvar LM_InferredResultTypes = [LM_ResultsMatchInferred, InferTypeOpAdaptor];

/// An op with a sharding rule of its own (ShardingRules.cpp); pointwise ops
/// list LM_ShardingOpInterface and take its default rule.
defvar LM_ShardingRule = DeclareOpInterfaceMethods<LM_ShardingOpInterface, ["getShardingRule"]>;
/// ... whose per-rank form also rewrites attributes (head counts, bounds).
defvar LM_ShardingRuleWithAttributes =
    DeclareOpInterfaceMethods<LM_ShardingOpInterface, ["getShardingRule", "shardAttributes"]>;

/// Every op but lm.constant becomes a plan step, so it states its cost
/// (getFlops; `costMethods` lists the defaults it overrides too).
class LM_DiffOp<string mnemonic, list<Trait> traits = [], list<string> costMethods = []>
    : LM_Op<mnemonic, !listconcat(traits,
          [Pure, DeclareOpInterfaceMethods<LM_GradientOpInterface>,
           DeclareOpInterfaceMethods<LM_CostOpInterface, costMethods>])>;

class LM_GradOp<string mnemonic, list<Trait> traits = []>
    : LM_Op<mnemonic, !listconcat(traits,
          [Pure, DeclareOpInterfaceMethods<LM_CostOpInterface>])>;

/// The op's kernel computes correctly when its result is given operand 0's
/// bytes: the plan writer does that when the operand has no other use
/// (docs/plan-format.md). lm-tblgen copies it into the plan op table.
def LM_MayOverwriteOperand0 : NativeOpTrait<"MayOverwriteOperand0"> {
  let cppNamespace = "::mlir::OpTrait::lm";
}

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

def LM_ConstantOp : LM_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "constant tensor";
  let description = [{
    A constant tensor; scalars are rank-0 tensors. The payload is a dense (or
    splat) elements attribute whose type is the result type.

    ```mlir
    %one = lm.constant dense<1.0> : tensor<f32>
    %w = lm.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf64>
    ```
  }];
  let arguments = (ins LM_DenseElementsAttr:$value);
  let results = (outs LM_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def LM_EmbeddingOp : LM_DiffOp<"embedding", !listconcat(LM_InferredResultTypes, [LM_ShardingRule]), ["getBytesAccessed"]> {
  let summary = "table lookup";
  let description = [{
    `out[s] = table[ids[s]]` for every position `s` of `ids`; the result is
    `[...S, D]` for a `[V, D]` table. An id outside `[0, V)` is a runtime error.

    ```mlir
    %h = lm.embedding %wte, %ids : (tensor<256x64xf32>, tensor<4x16xi32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$table, LM_IntTensor:$ids);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$table `,` $ids attr-dict `:` functional-type(operands, results)";
}

def LM_MatmulOp : LM_DiffOp<"matmul", !listconcat(LM_InferredResultTypes, [LM_MixesFloatTypes, LM_ShardingRule])> {
  let summary = "batched matrix product";
  let description = [{
    `lhs: [...batch, M, K]` times `rhs: [...batch, K, N]` (or a rank-2
    `rhs: [K, N]` shared by every batch element) gives `[...batch, M, N]`.
    With `transpose_lhs` the lhs is stored `[..., K, M]`; with `transpose_rhs`
    the rhs is stored `[..., N, K]`. Both operands have one element type;
    bf16 or f16 operands (inserted by `-lm-mixed-precision`) accumulate in
    f32 and give an f32 result, any other type gives its own.

    ```mlir
    %y = lm.matmul %x, %w : (tensor<4x16x64xf32>, tensor<64x256xf32>) -> tensor<4x16x256xf32>
    %z = lm.matmul %xb, %wb : (tensor<4x16x64xbf16>, tensor<64x256xbf16>) -> tensor<4x16x256xf32>
    %l = lm.matmul %h, %wte {transpose_rhs = true} : (tensor<4x16x64xf32>, tensor<256x64xf32>) -> tensor<4x16x256xf32>
    ```
  }];
  let arguments = (ins LM_StorageFloatTensor:$lhs, LM_StorageFloatTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def LM_CastOp : LM_DiffOp<"cast", [LM_MixesFloatTypes]> {
  let summary = "conversion between f32 and a reduced-precision storage type";
  let description = [{
    Converts every element of `x` to the result's element type (same shape):
    f32 to bf16 or f16 rounds to nearest even (NaN stays NaN), bf16 or f16
    to f32 is exact. Inserted by `-lm-mixed-precision` at the boundaries of
    its policy (docs/mixed-precision.md); `-lm-fuse` fuses it into the
    elementwise kernel of its producer, so a fused cast costs no kernel.
    The gradient is cast back to the operand's type.

    ```mlir
    %xb = lm.cast %x : (tensor<4x16x64xf32>) -> tensor<4x16x64xbf16>
    ```
  }];
  let arguments = (ins LM_StorageFloatTensor:$x);
  let results = (outs LM_StorageFloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

/// The C++ the elementwise classes give each op: its cost, `flops` per element
/// of the tensor it sweeps (CostOpInterface::getFlops), and its result type,
/// inferred by the C++ expression `infer` (LMOps.cpp's detail helpers).
class LM_ElementwiseDefs<int flops, string infer> {
  code defs = [{
    int64_t $cppClass::getFlops() {
      return }] # !cast<string>(flops) # [{ * ::mlir::lm::detail::sweptElements(*this);
    }
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> loc, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return }] # infer # [{;
    }
  }];
}

/// What makes an op elementwise (LM_ElementwiseOpInterface, whose trait the op
/// lists too): its scalar form, the C++ expression of one point of the result
/// over the operands `$0`, `$1`, ... (of the accumulation type `A`) and
/// contract/scalar_math.h, and whether its operands broadcast into the result
/// (NumPy rules) or all have the result's shape. `decl` is the interface's
/// getScalarForm. lm-tblgen -gen-lm-elementwise-table writes both facts into the
/// elementwise table (contract/elementwise.h), from which the CPU and CUDA
/// kernels are instantiated; generated kernels read getScalarForm.
class LM_ScalarForm<string expr, bit broadcast> {
  string scalarForm = expr;
  bit operandsBroadcast = broadcast;
  code decl = "::llvm::StringRef getScalarForm() { return \"" # expr # "\"; }";
}

/// Makes an elementwise op a builtin function of the .lm language:
/// `name(args...)` emits the op (numbers become rank-0 tensors when the op has
/// several operands). `params` are the language's names of the operands, in
/// order; the ODS operand names when empty. The frontend reads them from the
/// elementwise table.
class LM_Builtin<string name, list<string> params = []> {
  string builtinName = name;
  list<string> builtinParams = params;
}

class LM_BinaryOp<string mnemonic, string what, string scalar>
    : LM_DiffOp<mnemonic, !listconcat(LM_InferredResultTypes, [LM_ElementwiseOpInterface,
                                                                 LM_ShardingOpInterface])>,
      LM_ScalarForm<scalar, 1> {
  let summary = "elementwise " # what # " with broadcasting";
  let description = [{
    Elementwise }] # what # [{ with NumPy broadcasting: trailing dimensions
    are aligned, size-1 or missing dimensions broadcast.

    ```mlir
    %y = lm.}] # mnemonic # [{ %x, %b : (tensor<4x16x64xf32>, tensor<64xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$lhs, LM_FloatTensor:$rhs);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
  let extraClassDeclaration = decl;
  // One flop per element of the broadcast result; shapes::broadcast.
  let extraClassDefinition = LM_ElementwiseDefs<1,
      "::mlir::lm::detail::inferBroadcast(getOperationName(), loc, adaptor.getLhs(), "
      # "adaptor.getRhs(), types)">.defs;
}

def LM_AddOp : LM_BinaryOp<"add", "addition", "$0 + $1"> {
  // Adjacent slice_grads add up to the slice_grad of their concatenation.
  let hasCanonicalizer = 1;
}
def LM_SubOp : LM_BinaryOp<"sub", "subtraction", "$0 - $1">;
def LM_MulOp : LM_BinaryOp<"mul", "multiplication", "$0 * $1">;
def LM_DivOp : LM_BinaryOp<"div", "division", "$0 / $1">;

/// A comparison: 1 where it holds and 0 elsewhere, in the operands' float type
/// (a mask that multiplies or selects). Broadcasting as the arithmetic ops; no
/// gradient flows through it (its VJP gives both operands none).
class LM_CompareOp<string mnemonic, string what, string cmp>
    : LM_DiffOp<mnemonic, !listconcat(LM_InferredResultTypes, [LM_ElementwiseOpInterface,
                                                                 LM_ShardingOpInterface])>,
      LM_ScalarForm<"lmc::mask<A>($0 " # cmp # " $1)", 1>, LM_Builtin<mnemonic, ["a", "b"]> {
  let summary = "elementwise comparison `" # what # "` as a 0/1 mask";
  let description = [{
    `1` where `lhs }] # what # [{ rhs`, else `0`, with NumPy broadcasting; the
    result has the operands' float type.

    ```mlir
    %m = lm.}] # mnemonic # [{ %x, %zero : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$lhs, LM_FloatTensor:$rhs);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = decl;
  let extraClassDefinition = LM_ElementwiseDefs<1,
      "::mlir::lm::detail::inferBroadcast(getOperationName(), loc, adaptor.getLhs(), "
      # "adaptor.getRhs(), types)">.defs;
}

def LM_GtOp : LM_CompareOp<"gt", ">", ">">;
def LM_GeOp : LM_CompareOp<"ge", ">=", ">=">;
def LM_LtOp : LM_CompareOp<"lt", "<", "<">;
def LM_LeOp : LM_CompareOp<"le", "<=", "<=">;
def LM_EqOp : LM_CompareOp<"eq", "==", "==">;
def LM_NeOp : LM_CompareOp<"ne", "!=", "!=">;

def LM_WhereOp : LM_DiffOp<"where", [LM_ResultsMatchInferred, InferTypeOpAdaptor,
                                     LM_ElementwiseOpInterface, LM_ShardingOpInterface]>,
                 LM_ScalarForm<"lmc::select($0, $1, $2)", 1>,
                 LM_Builtin<"where", ["cond", "a", "b"]> {
  let summary = "elementwise selection by a mask";
  let description = [{
    `lhs` where `cond` is not 0, else `rhs`; the three operands broadcast
    together (NumPy rules). `cond` is a float mask (a comparison's result) and
    gets no gradient.

    ```mlir
    %y = lm.where %m, %x, %ninf : (tensor<4x16x16xf32>, tensor<4x16x16xf32>, tensor<f32>) -> tensor<4x16x16xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$cond, LM_FloatTensor:$lhs, LM_FloatTensor:$rhs);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$cond `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = decl;
}

/// `flops` per element; `minRank` 1 for ops working along the last dimension;
/// `scalar` the scalar form of an elementwise op ("" for one that is not).
class LM_UnaryOp<string mnemonic, string summ, string semantics, int flops, int minRank = 0,
                 string scalar = "">
    : LM_DiffOp<mnemonic, !listconcat(LM_InferredResultTypes, [LM_ShardingRule],
          !if(!empty(scalar), []<Trait>, [LM_ElementwiseOpInterface]))>,
      LM_ScalarForm<scalar, 0> {
  let summary = summ;
  let description = semantics # [{

    ```mlir
    %y = lm.}] # mnemonic # [{ %x : (tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = !if(!empty(scalar), "", decl);
  // Pointwise; an op working along the last dimension (minRank 1) needs it whole.
  let extraClassDefinition = LM_ElementwiseDefs<flops,
      "::mlir::lm::detail::inferElementwise(getOperationName(), loc, adaptor.getX(), \"operand\", "
      # !cast<string>(minRank) # ", types)">.defs # [{
    ::mlir::lm::ShardingRule $cppClass::getShardingRule() {
      return ::mlir::lm::detail::pointwiseShardingRule(*this, }] # !cast<string>(minRank) # [{);
    }
  }];
}

def LM_NegOp : LM_UnaryOp<"neg", "elementwise negation", "`-x`.", 1, 0, "-$0"> {
  let hasFolder = 1;
}
// Cube, fma, tanh, 3 muls.
def LM_GeluOp : LM_UnaryOp<"gelu", "GELU, tanh approximation",
    "`0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, elementwise.", 8, 0, "lmc::gelu($0)">;
// The exact (erf) GELU, HF's "gelu" (ELECTRA, DeBERTa):
// erf, 4 muls/adds.
def LM_GeluErfOp : LM_UnaryOp<"gelu_erf", "GELU, exact (erf) form",
    [{`0.5 x (1 + erf(x / sqrt(2)))`, elementwise (the language's `gelu(x, approximate = "none")`).}],
    8, 0, "lmc::geluErf($0)">;
// The zoo's math: flops per element are rough (a transcendental counts 4).
def LM_TanhOp : LM_UnaryOp<"tanh", "hyperbolic tangent", "`tanh(x)`, elementwise.", 4, 0,
                           "lmc::tanh($0)">, LM_Builtin<"tanh">;
def LM_SigmoidOp : LM_UnaryOp<"sigmoid", "logistic sigmoid", "`1 / (1 + exp(-x))`, elementwise.", 4, 0,
                              "lmc::sigmoid($0)">, LM_Builtin<"sigmoid">;
def LM_LogSigmoidOp : LM_UnaryOp<"log_sigmoid", "log of the logistic sigmoid",
    "`log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|))`, elementwise (no overflow).", 8, 0,
    "lmc::logSigmoid($0)">, LM_Builtin<"log_sigmoid">;
// Mamba's step size, positive heads (ELECTRA-style): exp, log1p, abs, max, add.
def LM_SoftplusOp : LM_UnaryOp<"softplus", "softplus",
    "`log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|))`, elementwise (no overflow).", 8, 0,
    "lmc::softplus($0)">, LM_Builtin<"softplus">;
def LM_ReluOp : LM_UnaryOp<"relu", "rectified linear unit", "`max(x, 0)`, elementwise.", 1, 0,
                           "lmc::relu($0)">, LM_Builtin<"relu">;
def LM_SiluOp : LM_UnaryOp<"silu", "SiLU (swish)", "`x * sigmoid(x)`, elementwise.", 5, 0,
                           "lmc::silu($0)">, LM_Builtin<"silu">;
def LM_ExpOp : LM_UnaryOp<"exp", "exponential", "`exp(x)`, elementwise.", 4, 0, "lmc::exp($0)">,
               LM_Builtin<"exp">;
def LM_LogOp : LM_UnaryOp<"log", "natural logarithm", "`log(x)`, elementwise.", 4, 0, "lmc::log($0)">,
               LM_Builtin<"log">;
def LM_SqrtOp : LM_UnaryOp<"sqrt", "square root", "`sqrt(x)`, elementwise.", 4, 0, "lmc::sqrt($0)">,
                LM_Builtin<"sqrt">;
def LM_RsqrtOp : LM_UnaryOp<"rsqrt", "reciprocal square root", "`1 / sqrt(x)`, elementwise.", 5, 0,
                            "lmc::rsqrt($0)">, LM_Builtin<"rsqrt">;
def LM_SinOp : LM_UnaryOp<"sin", "sine", "`sin(x)`, elementwise.", 4, 0, "lmc::sin($0)">,
               LM_Builtin<"sin">;
def LM_CosOp : LM_UnaryOp<"cos", "cosine", "`cos(x)`, elementwise.", 4, 0, "lmc::cos($0)">,
               LM_Builtin<"cos">;
// The identity whose VJP is zero: gradients do not flow into x.
def LM_StopGradientOp : LM_UnaryOp<"stop_gradient", "identity without gradient",
    "`x`; the VJP gives x no gradient (a frozen value, a sampled target).", 0, 0, "$0">,
    LM_Builtin<"stop_gradient">;

// Max, sub, exp, sum, div.
def LM_SoftmaxOp : LM_UnaryOp<"softmax", "softmax over the last dimension",
    "`exp(x - max) / sum(exp(x - max))` along the last dimension (rank >= 1).", 5, 1>;

def LM_LayerNormOp : LM_DiffOp<"layer_norm", !listconcat(LM_InferredResultTypes, [LM_ShardingRule])> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * gamma + beta` over the last dimension
    `D` of `x`, with the biased variance; `gamma` and `beta` are `[D]`.

    ```mlir
    %y = lm.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, LM_FloatTensor:$gamma, LM_FloatTensor:$beta,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LM_RmsNormOp : LM_DiffOp<"rms_norm", !listconcat(LM_InferredResultTypes, [LM_ShardingRule])> {
  let summary = "RMS normalization over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * gamma` over the last dimension `D` of `x`
    (LLaMA's RMSNorm, no centring, no bias); `gamma` is `[D]`.

    ```mlir
    %y = lm.rms_norm %x, %g {epsilon = 1.0e-06 : f64} : (tensor<4x16x64xf32>, tensor<64xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, LM_FloatTensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1e-6">:$epsilon);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x `,` $gamma attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LM_ConcatOp : LM_DiffOp<"concat", !listconcat(LM_InferredResultTypes, [LM_ShardingRule])> {
  let summary = "concatenation of two tensors along one dimension";
  let description = [{
    `lhs` then `rhs` along dimension `axis`; every other dimension agrees.
    (Binary, since a plan step has a fixed arity: the frontend chains it.)

    ```mlir
    %y = lm.concat %a, %b {axis = 2 : i64} : (tensor<4x16x32xf32>, tensor<4x16x32xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$lhs, LM_FloatTensor:$rhs, I64Attr:$axis);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def LM_ReduceMaxOp : LM_DiffOp<"reduce_max", LM_InferredResultTypes> {
  let summary = "maximum over dimensions, kept as size 1";
  let description = [{
    The maximum of `x` over the dimensions listed in `axes` (sorted, distinct);
    those dimensions become 1 in the result, which therefore broadcasts back
    to `x`. The gradient is split evenly between tied maxima (as
    `torch.amax`).

    ```mlir
    %m = lm.reduce_max %x {axes = array<i64: 2>} : (tensor<4x16x64xf32>) -> tensor<4x16x1xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, DenseI64ArrayAttr:$axes);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def LM_AttentionOp : LM_DiffOp<"attention", !listconcat(LM_InferredResultTypes, [LM_ShardingRuleWithAttributes])> {
  let summary = "multi-head scaled dot-product attention";
  let description = [{
    `q: [B, Tq, H*Dh]`, `k, v: [B, Tk, Hkv*Dh]`; head `h` is the column block
    `h*Dh ... (h+1)*Dh-1` of the last dimension. Per head:
    `softmax(q k^T / sqrt(Dh) + mask) v`, where a causal mask hides keys
    `j > i`. Grouped-query attention: with `num_kv_heads` = Hkv (which
    divides H; 0, the default, means H) query head `h` reads key/value head
    `h / (H / Hkv)`. Cross-attention: the keys may be of another length Tk
    than the queries, without the causal mask (causal needs Tk = Tq). A key
    padding mask is `lm.masked_attention`.

    ```mlir
    %y = lm.attention %q, %k, %v {causal = true, num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$q, LM_FloatTensor:$k, LM_FloatTensor:$v,
                       I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$q `,` $k `,` $v attr-dict `:` functional-type(operands, results)";
}

// A separate op rather than an optional operand of lm.attention: a plan step has
// the fixed arity of its op-table row (docs/plan-format.md), and the kernels, the
// CUDA table and the decode elaboration keep their one signature.
def LM_MaskedAttentionOp : LM_DiffOp<"masked_attention", !listconcat(LM_InferredResultTypes, [LM_ShardingRuleWithAttributes])> {
  let summary = "multi-head attention with a key padding mask";
  let description = [{
    `lm.attention` (same `q`, `k`, `v`, heads, grouped heads and
    cross-attention) with a key padding mask `mask: [B, Tk]` of `q`'s element
    type: key `j` of batch row `b` is attended where `mask[b, j] != 0` (1 on
    tokens) and gets probability exactly 0 where it is 0 (padding), as
    Hugging Face's additive `finfo.min` bias gives. A query row whose keys are
    all masked (with the causal mask too) outputs 0 and passes no gradient to
    `q`, `k` or `v`. The mask is data: the op has no gradient for it
    (`lm.masked_attention_grad` returns none).

    ```mlir
    %y = lm.masked_attention %q, %k, %v, %mask {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<2x5xf32>) -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$q, LM_FloatTensor:$k, LM_FloatTensor:$v, LM_FloatTensor:$mask,
                       I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$q `,` $k `,` $v `,` $mask attr-dict `:` functional-type(operands, results)";
}

// Bias, segments and scale as one more op rather than optional operands of
// lm.attention (a plan step has its op-table row's fixed arity): the absent ones
// are rank-0 operands, so the kernels keep one signature.
def LM_BiasedAttentionOp : LM_DiffOp<"biased_attention", !listconcat(LM_InferredResultTypes, [LM_ShardingRuleWithAttributes])> {
  let summary = "multi-head attention with an additive score bias and segment ids";
  let description = [{
    `lm.masked_attention` (same `q`, `k`, `v`, heads, grouped heads,
    cross-attention, causal and key padding mask) whose scores are
    `s = scale * q k^T + bias` before the softmax. `bias` is of `q`'s element
    type and broadcasts (NumPy rules, at most rank 4) to `[B, H, Tq, Tk]`:
    `[1, H, Tq, Tk]` for T5's relative positions, `[1, H, 1, Tk]` for ALiBi.
    `segments: i32[B, T]` (self-attention: Tq = Tk) lets query `i` see key `j`
    only where `segments[b, i] == segments[b, j]` (packed rows of several
    examples), besides the causal and padding masks. `scale` = 0, the default,
    means `1 / sqrt(Dh)`. An absent mask, bias or segments operand is a rank-0
    tensor (the frontend passes 1, 0 and 0): a rank-0 bias adds the same number
    to every score, which the softmax ignores, so the kernels skip it. Nothing
    of size Tq x Tk is stored but the bias itself; the gradient
    (`lm.biased_attention_grad`) includes the bias's, the sum of the score
    gradients over the broadcast dimensions; the mask and the segments are
    data.

    `dropout` = p > 0 drops attention probabilities as `lm.dropout` would on
    the softmax output `[B, H, Tq, Tk]` (torch's `F.dropout(softmax(s), p)`,
    HF's `attention_probs_dropout_prob`): probability (b, h, i, j) is kept,
    scaled by 1 / (1 - p), when `contract/dropout_math.h` keeps element
    `(h * Tq + i) * Tk + j` of row b's stream at `site` (`key` = the
    `dropout_key` input, i32[B, 2]), so the forward and the backward regenerate
    the same mask and nothing of size Tq x Tk is stored. The softmax statistics
    are those of the undropped probabilities (as FlashAttention's). With p = 0
    (the default) `key` is a rank-0 i32 (none); `-lm-eval-mode` sets p to 0
    outside the train step. A part's key `i32[2, B, 2]` (as `lm.dropout`'s)
    makes the op part `c` of a head-split op: its H heads are heads
    `c * H ... (c + 1) * H - 1` of the whole op, element indices offset by
    `c * H * Tq * Tk` (`-lm-spmd` writes it for tensor parallelism).

    ```mlir
    %y = lm.biased_attention %q, %k, %v, %mask, %bias, %seg, %key {num_heads = 4 : i64, scale = 1.0 : f64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<1x4x8x8xf32>, tensor<2x8xi32>, tensor<i32>) -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$q, LM_FloatTensor:$k, LM_FloatTensor:$v, LM_FloatTensor:$mask,
                       LM_FloatTensor:$bias, LM_IntTensor:$segments, LM_IntTensor:$key,
                       I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads,
                       DefaultValuedAttr<F64Attr, "0.0">:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       DefaultValuedAttr<I64Attr, "0">:$site);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$q `,` $k `,` $v `,` $mask `,` $bias `,` $segments `,` $key attr-dict `:` functional-type(operands, results)";
}

def LM_ReshapeOp : LM_DiffOp<"reshape", [LM_ShardingRule]> {
  let summary = "row-major reshape";
  let description = [{
    Reinterprets `x` in row-major order as the result shape, which has the
    same number of elements (and element type: bf16 and f16 too, a view of
    -lm-mixed-precision's GEMM operands).

    ```mlir
    %y = lm.reshape %x : (tensor<4x16x64xf32>) -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins LM_StorageFloatTensor:$x);
  let results = (outs LM_StorageFloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def LM_TransposeOp : LM_DiffOp<"transpose", !listconcat(LM_InferredResultTypes, [LM_ShardingRule])> {
  let summary = "dimension permutation";
  let description = [{
    `out.shape[i] = x.shape[permutation[i]]`.

    ```mlir
    %y = lm.transpose %x {permutation = array<i64: 0, 2, 1>} : (tensor<4x16x64xf32>) -> tensor<4x64x16xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, DenseI64ArrayAttr:$permutation);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def LM_SliceOp : LM_DiffOp<"slice", !listconcat(LM_InferredResultTypes, [LM_ShardingRuleWithAttributes])> {
  let summary = "strided static slice";
  let description = [{
    Takes indices `start[d], start[d] + stride[d], ... < limit[d]` along every
    dimension `d` (`0 <= start <= limit <= dim`, `stride >= 1`), giving
    `ceil((limit - start) / stride)` elements per dimension. Works on float
    tensors (bf16 and f16 too: the cut of a ZeRO-3 parameter gathered in
    bf16) and on `i32` ids.

    ```mlir
    %x = lm.slice %tokens {limit = array<i64: 4, 16>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<4x17xi32>) -> tensor<4x16xi32>
    ```
  }];
  let arguments = (ins LM_StorageTensor:$x, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs LM_StorageTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def LM_TakeAlongAxisOp : LM_DiffOp<"take_along_axis", LM_InferredResultTypes> {
  let summary = "gather along one axis (NumPy's take_along_axis)";
  let description = [{
    `out[..., i, ...] = x[..., indices[..., i, ...], ...]` along dimension
    `axis`: `indices` has the rank of `x`, and along every other dimension it
    has `x`'s size or 1 (it broadcasts); the result is `x`'s shape with
    `indices`' size along `axis`. An index outside `[0, x.shape[axis])` is a
    runtime error. The indices get no gradient; `x`'s is a scatter-add
    (`lm.take_along_axis_grad`). DeBERTa's relative-position scores gather
    `[B, H, T, 2k]` with a `[1, 1, T, T]` index.

    ```mlir
    %y = lm.take_along_axis %x, %idx {axis = 3 : i64} : (tensor<2x4x16x32xf32>, tensor<1x1x16x16xi32>) -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, LM_IntTensor:$indices, I64Attr:$axis);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x `,` $indices attr-dict `:` functional-type(operands, results)";
}

def LM_CrossEntropyOp : LM_DiffOp<"cross_entropy", LM_InferredResultTypes> {
  let summary = "mean softmax cross-entropy";
  let description = [{
    `logits: [...S, V]`, `targets: i32[...S]`: the mean, over the positions
    whose target is not `ignore_index`, of `logsumexp(logits) - logits[target]`
    (0 if every target is ignored). The result is a scalar.

    ```mlir
    %loss = lm.cross_entropy %logits, %targets {ignore_index = -100 : i64} : (tensor<4x16x256xf32>, tensor<4x16xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$logits, LM_IntTensor:$targets,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs LM_FloatScalar:$result);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` functional-type(operands, results)";
}

def LM_AccuracyOp : LM_DiffOp<"accuracy", LM_InferredResultTypes> {
  let summary = "top-1 accuracy of logits against targets (a metric)";
  let description = [{
    `logits: [...S, V]`, `targets: i32[...S]`: the fraction of the positions
    whose target is not `ignore_index` where the target is the row's argmax
    (the first maximal class, as `torch.argmax`; a NaN logit is never the
    argmax, so a NaN at the target is wrong); 0 if every target is
    ignored. The result is a scalar of the logits' type. A metric, not a
    loss: no gradient flows through it (its VJP gives both operands none).

    ```mlir
    %acc = lm.accuracy %logits, %targets {ignore_index = -100 : i64} : (tensor<4x16x256xf32>, tensor<4x16xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$logits, LM_IntTensor:$targets,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs LM_FloatScalar:$result);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` functional-type(operands, results)";
}

def LM_SumToOp : LM_DiffOp<"sum_to"> {
  let summary = "sum over broadcast dimensions (the adjoint of broadcasting)";
  let description = [{
    Sums `x` over the dimensions along which the result shape broadcasts to
    the shape of `x` (leading missing dimensions and size-1 dimensions).

    ```mlir
    %db = lm.sum_to %dy : (tensor<4x16x64xf32>) -> tensor<64xf32>
    %s = lm.sum_to %x : (tensor<4x16xf64>) -> tensor<f64>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

/// Ops on integer data: no gradient rule, since an i32 value carries no
/// gradient (-lm-autodiff never makes one active, docs/autodiff.md).
def LM_SampleOp : LM_Op<"sample", [Pure, LM_ResultsMatchInferred, InferTypeOpAdaptor,
                                   DeclareOpInterfaceMethods<LM_CostOpInterface>]> {
  let summary = "categorical sample from softmax(logits), by given random bits";
  let description = [{
    `logits: [...S, V]`, `bits: i32[...S]`: at each position `s`, the id `v`
    drawn from `softmax(logits[s])` by inverse transform sampling with the
    uniform number `u = (uint32(bits[s]) + 0.5) / 2^32`: the first `v` whose
    cumulative probability exceeds `u` (computed in f64 from `exp(x - max)`,
    the same way on every backend). The random bits are an operand, so the op
    is a pure function; the runtime supplies them keyed by (seed, step, sample)
    (the mlm transform's `random_bits` input, docs/runtime.md). The result is
    i32, so no gradient flows through a sample: the op has no VJP.

    ```mlir
    %ids = lm.sample %logits, %bits : (tensor<4x16x260xf32>, tensor<4x16xi32>) -> tensor<4x16xi32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$logits, LM_IntTensor:$bits);
  let results = (outs LM_IntTensor:$result);
  let assemblyFormat = "$logits `,` $bits attr-dict `:` functional-type(operands, results)";
}

/// Not an elementwise op for the fuser: its scalar form needs the element's
/// index and its row's key, which generated kernel bodies do not see.
def LM_DropoutOp : LM_DiffOp<"dropout", LM_InferredResultTypes> {
  let summary = "inverted dropout with a counter-based mask";
  let description = [{
    `x: [R, ...]`, `key: i32[R, 2]`: each element of row `r` of `x` is set to 0
    with probability `p` and the rest are scaled by `1 / (1 - p)`, so the
    expectation is kept. Whether element `i` (its flat index within the row) is
    dropped is a pure function of (`key[r]`, `site`, `i`)
    (`contract/dropout_math.h`): the runtime supplies `key` (the `dropout_key`
    input) from (seed, step, sample), the frontend numbers each dropout of a
    program with its own `site`, and the VJP is the same op on the gradient
    (the mask is regenerated, never stored). Only the training step keeps it:
    `-lm-eval-mode` makes it the identity in every other program.

    A part's key, `i32[2, R, 2]`: `key[0]` the rows' keys and `key[1, r, 0]`
    a part index `c`, makes `x` part `c` of rows split into equal consecutive
    parts: element `i`'s index is `c * m + i` (`m` the elements of a row of
    `x`), so each part drops what the whole row's dropout drops there.
    `-lm-spmd` writes it (`c` = `lm.axis_index`, by `lm.where_int`) for a
    sequence-parallel rank's positions.

    ```mlir
    %y = lm.dropout %x, %key {p = 1.0e-01 : f64, site = 3 : i64} : (tensor<4x16x64xf32>, tensor<4x2xi32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, LM_IntTensor:$key, F64Attr:$p,
                       DefaultValuedAttr<I64Attr, "0">:$site);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x `,` $key attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

/// A separate op from lm.where (not an i32 form of it): lm.where is
/// differentiable and elementwise-fusable, and the fused-kernel emitter writes
/// float kernels; this one is neither (no VJP, no LM_ElementwiseOpInterface), so
/// the fuser never places it in a float kernel (docs/dialect.md).
def LM_WhereIntOp : LM_Op<"where_int", [Pure, LM_ResultsMatchInferred, InferTypeOpAdaptor,
                                        DeclareOpInterfaceMethods<LM_CostOpInterface>]> {
  let summary = "elementwise selection of i32 values by a float mask";
  let description = [{
    `lhs` where `cond` is not 0, else `rhs`, for i32 values (ids, labels); the
    three operands broadcast together (NumPy rules, as lm.where). `cond` is a
    float mask (a comparison's result). The result is i32, so no gradient flows
    through it: the op has no VJP (ELECTRA's corrupted ids, the generator's
    samples at the selected positions).

    ```mlir
    %ids = lm.where_int %m, %sampled, %orig : (tensor<4x16xf32>, tensor<4x16xi32>, tensor<4x16xi32>) -> tensor<4x16xi32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$cond, LM_IntTensor:$lhs, LM_IntTensor:$rhs);
  let results = (outs LM_IntTensor:$result);
  let assemblyFormat = "$cond `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def LM_ToFloatOp : LM_Op<"to_float", [Pure, DeclareOpInterfaceMethods<LM_CostOpInterface>]> {
  let summary = "i32 to the float type, elementwise";
  let description = [{
    Converts integer ids or labels to the float type of the result (same
    shape), exactly for magnitudes below 2^24 (f32): masks and comparisons on
    ids (`ne(to_float(a), to_float(b))`). No gradient (the operand is i32).

    ```mlir
    %f = lm.to_float %labels : (tensor<4x16xi32>) -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins LM_IntTensor:$x);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

/// The counterpart of lm.to_float; no VJP (the result is i32), like lm.where_int
/// never placed in a float kernel by the fuser.
def LM_ToIntOp : LM_Op<"to_int", [Pure, DeclareOpInterfaceMethods<LM_CostOpInterface>]> {
  let summary = "float to i32, elementwise, truncating";
  let description = [{
    Converts float values to i32 (same shape), truncating toward zero as C
    does; exact for the whole numbers below 2^24 in magnitude that
    `lm.to_float` gives back. A value that is not finite or lies outside the
    i32 range is a run-time error on the CPU. `-lm-spmd` computes a rank's
    local ids with it (the vocabulary-parallel embedding, docs/distributed.md).

    ```mlir
    %ids = lm.to_int %f : (tensor<4x16xf32>) -> tensor<4x16xi32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x);
  let results = (outs LM_IntTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward ops (emitted by -lm-autodiff)
//===----------------------------------------------------------------------===//

def LM_GeluGradOp : LM_GradOp<"gelu_grad",
    !listconcat(LM_InferredResultTypes, [LM_ElementwiseOpInterface])>,
    LM_ScalarForm<"lmc::geluGrad($0, $1)", 0> {
  let summary = "adjoint of lm.gelu";
  let description = [{
    `dx = dy * gelu'(x)` for the tanh form of GELU.

    ```mlir
    %dx = lm.gelu_grad %x, %dy : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, LM_FloatTensor:$dy);
  let results = (outs LM_FloatTensor:$dx);
  let assemblyFormat = "$x `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = decl;
}

def LM_GeluErfGradOp : LM_GradOp<"gelu_erf_grad",
    !listconcat(LM_InferredResultTypes, [LM_ElementwiseOpInterface])>,
    LM_ScalarForm<"lmc::geluErfGrad($0, $1)", 0> {
  let summary = "adjoint of lm.gelu_erf";
  let description = [{
    `dx = dy * (Phi(x) + x phi(x))`, with `Phi` the standard normal CDF
    `0.5 (1 + erf(x / sqrt(2)))` and `phi` its density.

    ```mlir
    %dx = lm.gelu_erf_grad %x, %dy : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, LM_FloatTensor:$dy);
  let results = (outs LM_FloatTensor:$dx);
  let assemblyFormat = "$x `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = decl;
}

def LM_LayerNormGradOp : LM_GradOp<"layer_norm_grad", LM_InferredResultTypes> {
  let summary = "adjoint of lm.layer_norm";
  let description = [{
    Returns `dx`, `dgamma: [D]` and `dbeta: [D]`; recomputes the mean and the
    reciprocal standard deviation from `x`.

    ```mlir
    %dx, %dg, %db = lm.layer_norm_grad %x, %g, %dy {epsilon = 1.0e-05 : f64} : (tensor<8x64xf32>, tensor<64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, LM_FloatTensor:$gamma, LM_FloatTensor:$dy,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs LM_FloatTensor:$dx, LM_FloatTensor:$dgamma, LM_FloatTensor:$dbeta);
  let assemblyFormat = "$x `,` $gamma `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LM_RmsNormGradOp : LM_GradOp<"rms_norm_grad", LM_InferredResultTypes> {
  let summary = "adjoint of lm.rms_norm";
  let description = [{
    Returns `dx` and `dgamma: [D]`; recomputes the reciprocal RMS from `x`.

    ```mlir
    %dx, %dg = lm.rms_norm_grad %x, %g, %dy {epsilon = 1.0e-06 : f64} : (tensor<8x64xf32>, tensor<64xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, LM_FloatTensor:$gamma, LM_FloatTensor:$dy,
                       DefaultValuedAttr<F64Attr, "1e-6">:$epsilon);
  let results = (outs LM_FloatTensor:$dx, LM_FloatTensor:$dgamma);
  let assemblyFormat = "$x `,` $gamma `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LM_AttentionGradOp : LM_GradOp<"attention_grad", LM_InferredResultTypes> {
  let summary = "adjoint of lm.attention";
  let description = [{
    Returns `dq`, `dk`, `dv` (`dk`, `dv` of the key/value shape, summed over
    the query heads of a group); recomputes the attention probabilities.

    ```mlir
    %dq, %dk, %dv = lm.attention_grad %q, %k, %v, %dy {causal = true, num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$q, LM_FloatTensor:$k, LM_FloatTensor:$v,
                       LM_FloatTensor:$dy, I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$dq, LM_FloatTensor:$dk, LM_FloatTensor:$dv);
  let assemblyFormat = "$q `,` $k `,` $v `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  // With its forward lm.attention in the function: lm.attention_stats and
  // lm.attention_grad_stats (LMCanonicalize.cpp).
  let hasCanonicalizer = 1;
}

def LM_MaskedAttentionGradOp : LM_GradOp<"masked_attention_grad", LM_InferredResultTypes> {
  let summary = "adjoint of lm.masked_attention";
  let description = [{
    Returns `dq`, `dk`, `dv` as `lm.attention_grad` does, with the key padding
    mask of the forward: masked keys get zero `dk`, `dv`, and a row whose keys
    are all masked passes nothing. No gradient for the mask (it is data).

    ```mlir
    %dq, %dk, %dv = lm.masked_attention_grad %q, %k, %v, %mask, %dy {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<2x5xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$q, LM_FloatTensor:$k, LM_FloatTensor:$v, LM_FloatTensor:$mask,
                       LM_FloatTensor:$dy, I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$dq, LM_FloatTensor:$dk, LM_FloatTensor:$dv);
  let assemblyFormat = "$q `,` $k `,` $v `,` $mask `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LM_BiasedAttentionGradOp : LM_GradOp<"biased_attention_grad", LM_InferredResultTypes> {
  let summary = "adjoint of lm.biased_attention";
  let description = [{
    Returns `dq`, `dk`, `dv` as `lm.masked_attention_grad` does and `dbias`
    of the bias's shape: `sum P (dP - delta)` over the dimensions the bias
    broadcasts along (0 for a rank-0 bias). Recomputes the probabilities
    tile by tile, and with `dropout` > 0 the forward's mask from (`key`,
    `site`): dV = (D P)^T dY and dS = P (D dP - delta), D the mask's factors
    and delta = dY . Y of the dropped output; no gradient for the mask, the
    segments or the key (data).

    ```mlir
    %dq, %dk, %dv, %db = lm.biased_attention_grad %q, %k, %v, %mask, %bias, %seg, %key, %dy {num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<f32>, tensor<1x4x8x8xf32>, tensor<2x8xi32>, tensor<i32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<1x4x8x8xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$q, LM_FloatTensor:$k, LM_FloatTensor:$v, LM_FloatTensor:$mask,
                       LM_FloatTensor:$bias, LM_IntTensor:$segments, LM_IntTensor:$key, LM_FloatTensor:$dy,
                       I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads,
                       DefaultValuedAttr<F64Attr, "0.0">:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       DefaultValuedAttr<I64Attr, "0">:$site);
  let results = (outs LM_FloatTensor:$dq, LM_FloatTensor:$dk, LM_FloatTensor:$dv, LM_FloatTensor:$dbias);
  let assemblyFormat = "$q `,` $k `,` $v `,` $mask `,` $bias `,` $segments `,` $key `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LM_AttentionStatsOp : LM_GradOp<"attention_stats", LM_InferredResultTypes> {
  let summary = "lm.attention that also returns each query row's logsumexp";
  let description = [{
    `y` as `lm.attention` computes it, and `lse: [B, H, Tq]`, the logsumexp
    of each query row's scaled, masked scores (0 for a row that sees no key).
    Not written by users: canonicalization turns an `lm.attention` whose
    operands an `lm.attention_grad` also reads into this op and
    `lm.attention_grad_stats`, so the backward reuses the forward's output and
    statistics instead of recomputing them (dialect/IR/LMCanonicalize.cpp).

    ```mlir
    %y, %lse = lm.attention_stats %q, %k, %v {causal = true, num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$q, LM_FloatTensor:$k, LM_FloatTensor:$v,
                       I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$y, LM_FloatTensor:$lse);
  let assemblyFormat = "$q `,` $k `,` $v attr-dict `:` functional-type(operands, results)";
}

def LM_AttentionGradStatsOp : LM_GradOp<"attention_grad_stats", LM_InferredResultTypes> {
  let summary = "adjoint of lm.attention from the forward's output and logsumexp";
  let description = [{
    `dq`, `dk`, `dv` as `lm.attention_grad` returns them, reading the
    forward's output `y` and row logsumexp `lse` (`lm.attention_stats`)
    instead of recomputing both: the probabilities are `exp(s - lse)` tile by
    tile and `delta_i = dy_i . y_i`.

    ```mlir
    %dq, %dk, %dv = lm.attention_grad_stats %q, %k, %v, %y, %lse, %dy {causal = true, num_heads = 4 : i64} : (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$q, LM_FloatTensor:$k, LM_FloatTensor:$v, LM_FloatTensor:$y,
                       LM_FloatTensor:$lse, LM_FloatTensor:$dy, I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$dq, LM_FloatTensor:$dk, LM_FloatTensor:$dv);
  let assemblyFormat = "$q `,` $k `,` $v `,` $y `,` $lse `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// q, k and v as column blocks of one tensor, the fused projection's output. New ops
// rather than strides on lm.attention_stats / lm.attention_grad_stats: the grad writes
// one packed result where those write three, and a plan step has its op-table row's
// fixed arity.
def LM_PackedAttentionOp : LM_GradOp<"packed_attention", LM_InferredResultTypes> {
  let summary = "lm.attention of q, k, v packed as column blocks of one tensor";
  let description = [{
    `lm.attention` (heads, grouped heads, causal) of `q = qkv[:, :, 0:H*Dh]`,
    `k = qkv[:, :, H*Dh:(H+Hkv)*Dh]` and `v = qkv[:, :, (H+Hkv)*Dh:]`, with
    `qkv: [B, T, (H + 2*Hkv)*Dh]` (self-attention) as a fused projection
    `x @ wqkv` writes it; the kernel reads the three in place with qkv's row
    stride, so no slice is copied. Returns `y: [B, T, H*Dh]`. Not written by
    users: `-lm-pack-attention` (passes/PackAttention.cpp) forms it from an
    `lm.attention` of three such slices. CPU kernel only (lmc forms it for
    `--target cpu` alone).

    ```mlir
    %y = lm.packed_attention %qkv {causal = true, num_heads = 4 : i64} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$qkv, I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$qkv attr-dict `:` functional-type(operands, results)";
}

def LM_PackedAttentionStatsOp : LM_GradOp<"packed_attention_stats", LM_InferredResultTypes> {
  let summary = "lm.attention_stats of q, k, v packed as column blocks of one tensor";
  let description = [{
    `y` and `lse: [B, H, T]` as `lm.attention_stats` returns them for the
    q, k, v column blocks of `qkv` (see `lm.packed_attention`). Formed by
    `-lm-pack-attention` together with `lm.packed_attention_grad_stats`.

    ```mlir
    %y, %lse = lm.packed_attention_stats %qkv {causal = true, num_heads = 4 : i64} : (tensor<2x8x96xf32>) -> (tensor<2x8x32xf32>, tensor<2x4x8xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$qkv, I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$y, LM_FloatTensor:$lse);
  let assemblyFormat = "$qkv attr-dict `:` functional-type(operands, results)";
}

def LM_PackedAttentionGradStatsOp : LM_GradOp<"packed_attention_grad_stats", LM_InferredResultTypes> {
  let summary = "lm.attention_grad_stats writing dq, dk, dv packed into one tensor";
  let description = [{
    `lm.attention_grad_stats` of the q, k, v column blocks of `qkv` (see
    `lm.packed_attention`), reading the forward's `y` and `lse`
    (`lm.packed_attention_stats`); returns `dqkv` of qkv's shape, whose column
    blocks are `dq`, `dk`, `dv`: the gradient the concatenation of the three
    would give, written in place.

    ```mlir
    %dqkv = lm.packed_attention_grad_stats %qkv, %y, %lse, %dy {causal = true, num_heads = 4 : i64} : (tensor<2x8x96xf32>, tensor<2x8x32xf32>, tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> tensor<2x8x96xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$qkv, LM_FloatTensor:$y, LM_FloatTensor:$lse, LM_FloatTensor:$dy,
                       I64Attr:$num_heads,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$dqkv);
  let assemblyFormat = "$qkv `,` $y `,` $lse `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LM_SoftmaxGradOp : LM_GradOp<"softmax_grad", LM_InferredResultTypes> {
  let summary = "adjoint of lm.softmax";
  let description = [{
    `dx = y * (dy - sum(dy * y))` along the last dimension, where `y` is the
    softmax output.

    ```mlir
    %dx = lm.softmax_grad %y, %dy : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$y, LM_FloatTensor:$dy);
  let results = (outs LM_FloatTensor:$dx);
  let assemblyFormat = "$y `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LM_CrossEntropyGradOp : LM_GradOp<"cross_entropy_grad", LM_InferredResultTypes> {
  let summary = "adjoint of lm.cross_entropy";
  let description = [{
    `dlogits = dloss * (softmax(logits) - onehot(target)) / n_valid`, with zero
    rows where the target is `ignore_index`.

    ```mlir
    %dl = lm.cross_entropy_grad %logits, %targets, %dloss {ignore_index = -100 : i64} : (tensor<4x16x256xf32>, tensor<4x16xi32>, tensor<f32>) -> tensor<4x16x256xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$logits, LM_IntTensor:$targets,
                       LM_FloatScalar:$dloss,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs LM_FloatTensor:$dlogits);
  let assemblyFormat = "$logits `,` $targets `,` $dloss attr-dict `:` functional-type(operands, results)";
  // With its forward lm.cross_entropy in the function: lm.cross_entropy_with_grad.
  let hasCanonicalizer = 1;
}

def LM_CrossEntropyWithGradOp : LM_GradOp<"cross_entropy_with_grad",
    [LM_ResultsMatchInferred, InferTypeOpAdaptor, LM_MayOverwriteOperand0]> {
  let summary = "lm.cross_entropy and lm.cross_entropy_grad in one pass";
  let description = [{
    `dlogits` as `lm.cross_entropy_grad` and `loss` as `lm.cross_entropy`
    compute them, from one read of each row of `logits`. Not written by users:
    canonicalization forms it from a train step's `lm.cross_entropy` and the
    `lm.cross_entropy_grad` of the same operands when `dloss` is known before
    the forward (the seed of the backward is a constant), so the logits are
    read once instead of twice and the exponentials computed once
    (dialect/IR/LMCanonicalize.cpp). The plan may give `dlogits` the logits'
    own bytes (LM_MayOverwriteOperand0): each row is read before it is written.

    ```mlir
    %dl, %loss = lm.cross_entropy_with_grad %logits, %targets, %dloss {ignore_index = -100 : i64} : (tensor<4x16x256xf32>, tensor<4x16xi32>, tensor<f32>) -> (tensor<4x16x256xf32>, tensor<f32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$logits, LM_IntTensor:$targets,
                       LM_FloatScalar:$dloss,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs LM_FloatTensor:$dlogits, LM_FloatScalar:$loss);
  let assemblyFormat = "$logits `,` $targets `,` $dloss attr-dict `:` functional-type(operands, results)";
}

def LM_LinearCrossEntropyOp : LM_GradOp<"linear_cross_entropy", !listconcat(LM_InferredResultTypes, [LM_MixesFloatTypes])> {
  let summary = "cross_entropy(matmul(h, w)) chunked over rows: no [rows, V] logits";
  let description = [{
    `h: [...S, D]`, `w: [V, D]` with `transpose_rhs` (a tied embedding table)
    or `[D, V]` without, `targets: i32[...S]`: the loss
    `lm.cross_entropy(lm.matmul(h, w), targets)` computes, with the logits
    formed `chunk_rows` rows at a time in a scratch of `[chunk_rows, V]`
    (Liger Kernel's FusedLinearCrossEntropy), so the whole `[...S, V]` logits
    are never stored. `chunk_rows` 0 is one chunk. Not written by users:
    `-lm-fuse-linear-cross-entropy` forms it where the logits feed only the
    loss (passes/FuseLinearCrossEntropy.cpp); the chunked GEMMs may round
    otherwise than the whole one. `h` and `w` share one element type; bf16
    or f16 operands (-lm-mixed-precision, as lm.matmul's) give f32 logits,
    softmax and loss.

    ```mlir
    %loss = lm.linear_cross_entropy %h, %wte, %t {chunk_rows = 32 : i64, transpose_rhs = true} : (tensor<4x16x64xf32>, tensor<256x64xf32>, tensor<4x16xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins LM_StorageFloatTensor:$h, LM_StorageFloatTensor:$w, LM_IntTensor:$targets,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<I64Attr, "0">:$chunk_rows);
  let results = (outs LM_FloatScalar:$loss);
  let assemblyFormat = "$h `,` $w `,` $targets attr-dict `:` functional-type(operands, results)";
}

def LM_LinearCrossEntropyWithGradOp : LM_GradOp<"linear_cross_entropy_with_grad",
    [LM_ResultsMatchInferred, InferTypeOpAdaptor, LM_MixesFloatTypes]> {
  let summary = "lm.linear_cross_entropy with the gradients of h and w, chunked over rows";
  let description = [{
    The loss of `lm.linear_cross_entropy` and, for the seed `dloss`, `dh` (the
    shape of `h`) and `dw` (the shape of `w`), in one pass over chunks of
    `chunk_rows` rows: the chunk's logits (a GEMM), their softmax, loss and
    gradient in place, then `dh_chunk = dlogits_chunk @ w` and
    `dw += dlogits_chunk^T @ h_chunk` (GEMMs). Only one `[chunk_rows, V]`
    scratch exists, neither the logits nor their gradient. With bf16 or f16
    `h` and `w` the logits, their softmax and gradient, `dloss`, `dh`, `dw`
    (accumulated over the chunks) and the loss are f32; the two backward
    GEMMs read the chunk's gradient rounded to the operands' type. Not written by
    users: `-lm-fuse-linear-cross-entropy` forms it from a train step's
    logits matmul, `lm.cross_entropy_with_grad` and the two matmuls of the
    logits' gradient.

    ```mlir
    %dh, %dw, %loss = lm.linear_cross_entropy_with_grad %h, %wte, %t, %seed {chunk_rows = 32 : i64, transpose_rhs = true} : (tensor<4x16x64xf32>, tensor<256x64xf32>, tensor<4x16xi32>, tensor<f32>) -> (tensor<4x16x64xf32>, tensor<256x64xf32>, tensor<f32>)
    ```
  }];
  let arguments = (ins LM_StorageFloatTensor:$h, LM_StorageFloatTensor:$w, LM_IntTensor:$targets,
                       LM_FloatScalar:$dloss,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<I64Attr, "0">:$chunk_rows);
  let results = (outs LM_FloatTensor:$dh, LM_FloatTensor:$dw, LM_FloatScalar:$loss);
  let assemblyFormat = "$h `,` $w `,` $targets `,` $dloss attr-dict `:` functional-type(operands, results)";
}

def LM_LinearCrossEntropyStatsOp : LM_DiffOp<"linear_cross_entropy_stats", LM_InferredResultTypes> {
  let summary = "per-row logsumexp, target logit and argmax of matmul(h, w) + bias on one rank's vocabulary, chunked";
  let description = [{
    The forward of Megatron-LM's vocabulary-parallel cross-entropy on one
    rank: `w` holds the vocabulary's rows (classes) `first ... first + Vr - 1`
    (`[Vr, D]` with `transpose_rhs`, else `[D, Vr]`), `bias: [Vr]` their
    biases (zeros for a head without one), `h: [...S, D]`,
    `targets: i32[...S]`, `first` a whole number as a float scalar (from
    `lm.axis_index`). For each row of the rank's logits
    `z = matmul(h, w) + bias`: `lse = logsumexp(z)`,
    `target_logit = z[target - first]` when the target is one of the rank's
    classes, else 0 (another rank's, or `ignore_index`), `max = max(z)` and
    `argmax = first + (the first j with z[j] = max)`, the global class as a
    float (exact below 2^24), NaN logits skipped as `lm.accuracy` skips them
    (a row of NaNs: max -inf, argmax `vocab`). All four results are `[...S]`. The logits are
    formed `chunk_rows` rows at a time in one `[chunk_rows, Vr]` scratch (as
    `lm.linear_cross_entropy`'s), never whole. A target neither
    `ignore_index` nor in `[0, vocab)` is an error. Not written by users:
    `-lm-spmd` writes it for a vocabulary table split over the tensor axis and
    combines the ranks' results with `lm.all_gather` and `lm.all_reduce`
    (passes/VocabParallel.cpp, docs/distributed.md): lse and target_logit
    into the loss, max and argmax into an accuracy. Its VJP is
    `lm.linear_cross_entropy_stats_grad`; max and argmax get no gradient
    (they feed only metrics).

    ```mlir
    %lse, %tl, %max, %arg = lm.linear_cross_entropy_stats %h, %wte, %t, %first, %b {chunk_rows = 32 : i64, transpose_rhs = true, vocab = 256 : i64} : (tensor<4x16x64xf32>, tensor<128x64xf32>, tensor<4x16xi32>, tensor<f32>, tensor<128xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$h, LM_FloatTensor:$w, LM_IntTensor:$targets, LM_FloatScalar:$first,
                       LM_FloatTensor:$bias,
                       I64Attr:$vocab,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<I64Attr, "0">:$chunk_rows);
  let results = (outs LM_FloatTensor:$lse, LM_FloatTensor:$target_logit, LM_FloatTensor:$max,
                      LM_FloatTensor:$argmax);
  let assemblyFormat = "$h `,` $w `,` $targets `,` $first `,` $bias attr-dict `:` functional-type(operands, results)";
}

def LM_LinearCrossEntropyStatsGradOp : LM_GradOp<"linear_cross_entropy_stats_grad", LM_InferredResultTypes> {
  let summary = "VJP of lm.linear_cross_entropy_stats, chunked over rows";
  let description = [{
    For the operands of `lm.linear_cross_entropy_stats`, its `lse` and the
    cotangents `dlse` and `dtarget` (`[...S]` each): the rank's logit
    gradient `dz = dlse * exp(z - lse) + dtarget * onehot(target - first)`
    (the one-hot only for the rank's classes), recomputed chunk by chunk from
    a GEMM of `h` and `w` plus `bias` (the one GEMM more than the fused loss's
    backward runs), then `dh = dz @ w` (the rank's part: the ranks' parts sum
    to the gradient), `dw = dz^T @ h` and `dbias` the column sums of `dz`,
    chunk by chunk, so only one `[chunk_rows, Vr]` scratch exists.

    ```mlir
    %dh, %dw, %db = lm.linear_cross_entropy_stats_grad %h, %wte, %t, %first, %b, %lse, %dlse, %dtl {chunk_rows = 32 : i64, transpose_rhs = true, vocab = 256 : i64} : (tensor<4x16x64xf32>, tensor<128x64xf32>, tensor<4x16xi32>, tensor<f32>, tensor<128xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16x64xf32>, tensor<128x64xf32>, tensor<128xf32>)
    ```
  }];
  let arguments = (ins LM_FloatTensor:$h, LM_FloatTensor:$w, LM_IntTensor:$targets, LM_FloatScalar:$first,
                       LM_FloatTensor:$bias, LM_FloatTensor:$lse, LM_FloatTensor:$dlse, LM_FloatTensor:$dtarget,
                       I64Attr:$vocab,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<I64Attr, "0">:$chunk_rows);
  let results = (outs LM_FloatTensor:$dh, LM_FloatTensor:$dw, LM_FloatTensor:$dbias);
  let assemblyFormat = "$h `,` $w `,` $targets `,` $first `,` $bias `,` $lse `,` $dlse `,` $dtarget attr-dict `:` functional-type(operands, results)";
}

def LM_EmbeddingGradOp : LM_GradOp<"embedding_grad"> {
  let summary = "adjoint of lm.embedding (scatter-add)";
  let description = [{
    `dtable[ids[s]] += dy[s]` into a zero `[V, D]` table; `V` comes from the
    result type.

    ```mlir
    %dw = lm.embedding_grad %ids, %dy : (tensor<4x16xi32>, tensor<4x16x64xf32>) -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins LM_IntTensor:$ids, LM_FloatTensor:$dy);
  let results = (outs LM_FloatTensor:$dtable);
  let assemblyFormat = "$ids `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LM_EmbeddingGradAddOp : LM_GradOp<"embedding_grad_add",
    [LM_ResultsMatchInferred, InferTypeOpAdaptor, LM_MayOverwriteOperand0]> {
  let summary = "lm.embedding_grad added to another gradient of the table";
  let description = [{
    `base` with `dy[s]` added to row `ids[s]`, for every position `s` in
    order: `base + embedding_grad(ids, dy)` without the zero-filled `[V, D]`
    table and the pass that adds it. Not written by users: canonicalization
    forms it where a table's gradient has another term, as a tied input
    embedding and output projection has (dialect/IR/LMCanonicalize.cpp). The
    plan may give the result `base`'s own bytes (LM_MayOverwriteOperand0).

    ```mlir
    %dw = lm.embedding_grad_add %dhead, %ids, %dy : (tensor<256x64xf32>, tensor<4x16xi32>, tensor<4x16x64xf32>) -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$base, LM_IntTensor:$ids, LM_FloatTensor:$dy);
  let results = (outs LM_FloatTensor:$dtable);
  let assemblyFormat = "$base `,` $ids `,` $dy attr-dict `:` functional-type(operands, results)";
}

def LM_SliceGradOp : LM_GradOp<"slice_grad"> {
  let summary = "adjoint of lm.slice";
  let description = [{
    Scatters the slice-shaped `dy` into zeros of the forward input's shape
    (the result type), at the positions selected by `start`, `limit`, `stride`.

    ```mlir
    %dx = lm.slice_grad %dy {limit = array<i64: 4, 32>, start = array<i64: 0, 16>, stride = array<i64: 1, 1>} : (tensor<4x16xf32>) -> tensor<4x32xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$dy, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs LM_FloatTensor:$dx);
  let assemblyFormat = "$dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def LM_FillOp : LM_GradOp<"fill"> {
  let summary = "a tensor with every element equal to one value";
  let description = [{
    Every element of the result is `value`. -lm-autodiff writes it for the
    gradient of a parameter that does not reach the loss (zeros): unlike a
    splat `lm.constant`, which a plan holds as a CONSTANT buffer of all its
    bytes, it is a step that writes the result's buffer (the parameter's GRAD
    buffer), so the plan and the compiler hold none of those bytes. Not
    folded into a constant for the same reason.

    ```mlir
    %g = lm.fill 0.000000e+00 : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def LM_TakeAlongAxisGradOp : LM_GradOp<"take_along_axis_grad"> {
  let summary = "adjoint of lm.take_along_axis (scatter-add along one axis)";
  let description = [{
    `dx[..., indices[..., i, ...], ...] += dy[..., i, ...]` along `axis` into
    zeros of the forward `x`'s shape (the result type); indices repeated or
    broadcast add up.

    ```mlir
    %dx = lm.take_along_axis_grad %idx, %dy {axis = 3 : i64} : (tensor<1x1x16x16xi32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x32xf32>
    ```
  }];
  let arguments = (ins LM_IntTensor:$indices, LM_FloatTensor:$dy, I64Attr:$axis);
  let results = (outs LM_FloatTensor:$dx);
  let assemblyFormat = "$indices `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Incremental decoding (the prefill and decode programs, docs/runtime.md)
//===----------------------------------------------------------------------===//

/// A rank-0 i32 tensor: the position offset of the decode programs.
def LM_IntScalar : RankedTensorOf<[I32], [HasAnyRankOfPred<[0]>], "0-d i32 tensor">;

/// A step that may update a STATE buffer in place: its result replaces its
/// first operand, which the plan writer gives the same buffer (docs/plan-format.md).
def LM_UpdatesStateInPlace : NativeOpTrait<"UpdatesStateInPlace"> {
  let cppNamespace = "::mlir::OpTrait::lm";
}

/// An op of the prefill and decode programs only. They are never
/// differentiated, so these ops have no VJP: -lm-autodiff rejects them
/// ("it has no gradient rule").
class LM_DecodeOp<string mnemonic, list<Trait> traits = []>
    : LM_Op<mnemonic, !listconcat(traits, [Pure, DeclareOpInterfaceMethods<LM_CostOpInterface>])>;

def LM_DynamicSliceOp : LM_DecodeOp<"dynamic_slice", LM_InferredResultTypes> {
  let summary = "slice at a position offset known only at run time";
  let description = [{
    Takes `size` indices of dimension `axis` of `x`, from `offset + start`
    (`offset` a rank-0 i32 tensor) on, and every other dimension whole. The
    frontend writes it for `x[pos + a : pos + b]` in a decode program; an
    offset that leaves the dimension is a run-time error. No VJP (inference
    only).

    ```mlir
    %p = lm.dynamic_slice %wpe, %offset {axis = 0 : i64, size = 1 : i64, start = 0 : i64} : (tensor<64x32xf32>, tensor<i32>) -> tensor<1x32xf32>
    ```
  }];
  let arguments = (ins LM_AnyTensor:$x, LM_IntScalar:$offset, I64Attr:$axis,
                       I64Attr:$start, I64Attr:$size);
  let results = (outs LM_AnyTensor:$result);
  let assemblyFormat = "$x `,` $offset attr-dict `:` functional-type(operands, results)";
}

def LM_CacheWriteOp : LM_DecodeOp<"cache_write",
    [LM_ResultsMatchInferred, InferTypeOpAdaptor, LM_UpdatesStateInPlace, LM_ShardingRule]> {
  let summary = "a key/value cache with rows replaced";
  let description = [{
    `cache: [B, W, D]`, `x: [B, C, D]`: the cache with rows
    `offset ... offset + C - 1` replaced by `x` (an offset with
    `offset + C > W` is a run-time error). In a plan the result is the cache's
    own STATE buffer, updated in place. No VJP (inference only).

    ```mlir
    %k1 = lm.cache_write %kc, %k, %offset : (tensor<1x64x32xf32>, tensor<1x1x32xf32>, tensor<i32>) -> tensor<1x64x32xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$cache, LM_FloatTensor:$x, LM_IntScalar:$offset);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$cache `,` $x `,` $offset attr-dict `:` functional-type(operands, results)";
}

def LM_CachedAttentionOp : LM_DecodeOp<"cached_attention", !listconcat(LM_InferredResultTypes, [LM_ShardingRuleWithAttributes])> {
  let summary = "causal attention of new queries over a key/value cache";
  let description = [{
    `q: [B, C, H*Dh]` holds the queries of positions `offset ... offset + C - 1`,
    `k, v: [B, W, Hkv*Dh]` the keys and values of positions `0 ... W - 1`
    (a cache); query `i` attends keys `0 ... offset + i`, as `lm.attention`
    with `causal = true` does for the same positions. Heads and grouped-query
    heads as in `lm.attention`; `offset + C > W` is a run-time error. No VJP
    (inference only).

    ```mlir
    %y = lm.cached_attention %q, %kc, %vc, %offset {num_heads = 4 : i64} : (tensor<1x1x32xf32>, tensor<1x64x32xf32>, tensor<1x64x32xf32>, tensor<i32>) -> tensor<1x1x32xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$q, LM_FloatTensor:$k, LM_FloatTensor:$v,
                       LM_IntScalar:$offset, I64Attr:$num_heads,
                       DefaultValuedAttr<I64Attr, "0">:$num_kv_heads);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$q `,` $k `,` $v `,` $offset attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Fusion (formed by -lm-fuse; each region becomes one generated kernel)
//===----------------------------------------------------------------------===//

def LM_FusionOp : LM_Op<"fusion", [IsolatedFromAbove, Pure, SingleBlock, LM_MixesFloatTypes]> {
  let summary = "a fused region: one kernel";
  let description = [{
    Marks a kernel boundary. The region's block arguments are the `inputs`
    (one per operand, same types); its ops compute the values `lm.yield`
    returns, which become the results. Formed by `-lm-fuse` after autodiff and
    lowered by codegen to one generated kernel (docs/fusion.md): elementwise
    ops over one iteration space, optionally reduced by `lm.sum_to` over
    leading dimensions, or applied as the epilogue of one `lm.matmul` whose
    product feeds them.

    ```mlir
    %h, %a = lm.fusion %x, %w, %b : (tensor<8x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> (tensor<8x256xf32>, tensor<8x256xf32>) {
    ^bb0(%x0: tensor<8x64xf32>, %w0: tensor<64x256xf32>, %b0: tensor<256xf32>):
      %p = lm.matmul %x0, %w0 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
      %y = lm.add %p, %b0 : (tensor<8x256xf32>, tensor<256xf32>) -> tensor<8x256xf32>
      %g = lm.gelu %y : (tensor<8x256xf32>) -> tensor<8x256xf32>
      lm.yield %y, %g : tensor<8x256xf32>, tensor<8x256xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<LM_StorageTensor>:$inputs);
  let results = (outs Variadic<LM_StorageFloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::mlir::TypeRange":$resultTypes, "::mlir::ValueRange":$inputs)>];
}

def LM_YieldOp : LM_Op<"yield", [Pure, Terminator, HasParent<"FusionOp">, LM_MixesFloatTypes]> {
  let summary = "the values a fused region returns";
  let description = [{
    Terminates an `lm.fusion` region; its operands are the region's results.

    ```mlir
    lm.yield %y, %g : tensor<8x256xf32>, tensor<8x256xf32>
    ```
  }];
  let arguments = (ins Variadic<LM_StorageTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

//===----------------------------------------------------------------------===//
// Collectives (docs/distributed.md)
//===----------------------------------------------------------------------===//

/// A collective over the ranks of one mesh axis (`mesh_axis`: 0 data, 1
/// tensor, the order of `mesh = { data = D, tensor = T }`) with `group_size`
/// ranks in each group. Every rank runs the same op at the same point of the
/// same program; the runtime's communicator (runtime/comm) moves the data and
/// sums in rank order, so results never depend on timing.
///
/// VJPs follow JAX's convention for values that live on several ranks: the
/// cotangent a rank holds is its part of the cotangent, the gradient being
/// the sum of the parts. So all_reduce's adjoint is all_reduce, all_gather's
/// is reduce_scatter, reduce_scatter's is all_gather (the transposes of the
/// linear maps), and DP's gradient all-reduce is the adjoint of using a
/// replicated parameter on every rank.
class LM_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : LM_DiffOp<mnemonic, !listconcat(traits, LM_InferredResultTypes)>;

def LM_AllReduceOp : LM_CollectiveOp<"all_reduce", [LM_MayOverwriteOperand0]> {
  let summary = "sum (or mean) over the ranks of a mesh axis";
  let description = [{
    Every rank gets `((x_0 + x_1) + ...) + x_{n-1}` over the `group_size`
    ranks of mesh axis `mesh_axis`, in rank order, divided by `group_size`
    when `mean` is set (as gradient accumulation divides its sum). Data
    parallel training all-reduces each gradient and the loss with the mean.

    ```mlir
    %g = lm.all_reduce %dw {mesh_axis = 0 : i64, group_size = 2 : i64, mean = true} : (tensor<64x256xf32>) -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, I64Attr:$mesh_axis, I64Attr:$group_size,
                       DefaultValuedAttr<BoolAttr, "false">:$mean);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def LM_ReduceScatterOp : LM_CollectiveOp<"reduce_scatter"> {
  let summary = "sum over the ranks of a mesh axis, each rank keeping one slice";
  let description = [{
    The rank-order sum of `x` over the `group_size` ranks of `mesh_axis`,
    split along dimension `dim` into `group_size` equal slices: rank `q` of
    the group keeps slice `q` (`dim` must be divisible by `group_size`).

    ```mlir
    %s = lm.reduce_scatter %g {mesh_axis = 0 : i64, group_size = 2 : i64, dim = 0 : i64} : (tensor<64x256xf32>) -> tensor<32x256xf32>
    ```
  }];
  let arguments = (ins LM_FloatTensor:$x, I64Attr:$mesh_axis, I64Attr:$group_size, I64Attr:$dim);
  let results = (outs LM_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def LM_AllGatherOp : LM_CollectiveOp<"all_gather"> {
  let summary = "concatenation of every rank's tensor along one dimension";
  let description = [{
    The `x` of the `group_size` ranks of `mesh_axis`, concatenated in rank
    order along dimension `dim`; every rank gets the whole. It only moves
    elements, so it takes bf16 and f16 too: under ZeRO stage 3 with
    `--precision bf16` the ranks gather their parameter slices cast to bf16
    (-lm-mixed-precision). The sums (all_reduce, reduce_scatter) stay f32 or
    f64.

    ```mlir
    %w = lm.all_gather %shard {mesh_axis = 1 : i64, group_size = 2 : i64, dim = 1 : i64} : (tensor<64x128xf32>) -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins LM_StorageFloatTensor:$x, I64Attr:$mesh_axis, I64Attr:$group_size, I64Attr:$dim);
  let results = (outs LM_StorageFloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

/// Not a collective (it moves no data), but it belongs to the mesh: the same
/// attributes name the axis and its group as the collectives' do.
def LM_AxisIndexOp : LM_Op<"axis_index", [Pure, DeclareOpInterfaceMethods<LM_CostOpInterface>]> {
  let summary = "the rank's coordinate along a mesh axis";
  let description = [{
    The index `0 ... group_size - 1` of this rank within its group of mesh
    axis `mesh_axis` (the rank order the collectives sum in), as a rank-0
    tensor: i32, or a float type holding the same whole number. JAX's
    `lax.axis_index`, MLIR mesh's `mesh.process_linear_index` for one axis.
    In one process (and with `group_size = 1`) it is 0. The runtime checks
    that the axis's group has `group_size` ranks, as for a collective.
    `-lm-spmd` reads it for the rows of a vocabulary-parallel table a rank
    holds. No operands, so nothing to differentiate: it is never active.

    ```mlir
    %r = lm.axis_index {mesh_axis = 1 : i64, group_size = 2 : i64} : tensor<f32>
    ```
  }];
  let arguments = (ins I64Attr:$mesh_axis, I64Attr:$group_size);
  let results = (outs LM_AnyTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // LM_OPS_TD

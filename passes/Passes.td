//===- Passes.td - lm passes -------------------------------*- tablegen -*-===//
//
// Every pass of the lm compiler, usable from lm-opt by its flag.
//
//===----------------------------------------------------------------------===//

#ifndef LM_PASSES_TD
#define LM_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Autodiff
//===----------------------------------------------------------------------===//

def LMAutodiffPass : Pass<"lm-autodiff", "mlir::ModuleOp"> {
  let summary = "Adds a train step (loss and parameter gradients) for every objective";
  let description = [{
    For every `func.func` with the unit attribute `lm.objective`, which must
    return one scalar float loss and whose `lm.param` arguments (each named by
    a string) must be statically shaped float tensors, adds
    `@<name>_train_step`: same arguments and
    argument attributes, unit attribute `lm.train_step`, results `(loss,
    dloss/dp for every lm.param argument in order)`, each gradient result with
    `{lm.grad_of = "<param name>"}`. The body recomputes the forward (a clone
    of the objective's body) and then runs a reverse sweep built from the ops'
    GradientOpInterface rules, accumulating with lm.add where a value is used
    more than once. Parameters that do not influence the loss get zeros.
    Arguments that also carry the unit attribute `lm.frozen` get no gradient
    result (frozen parameters: the optimizer never updates them).
    With `loss-scale`, the train step takes one more argument, last, a scalar
    of the loss's type named `{lm.input = "loss_scale"}`, and seeds the
    backward with it instead of 1: every gradient comes out multiplied by the
    scale (fp16's dynamic loss scaling, docs/mixed-precision.md).
    See docs/autodiff.md.
  }];
  let options = [
    Option<"lossScale", "loss-scale", "bool", "false",
           "seed the backward with a `loss_scale` argument instead of 1">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect", "::mlir::func::FuncDialect"];
}

def LMLoraPass : Pass<"lm-lora", "mlir::ModuleOp"> {
  let summary = "Adds LoRA adapters to the matmul weights named by the module's lm.lora";
  let description = [{
    With a module attribute `lm.lora = {rank = R, alpha = A, targets =
    ["layer.0.attn.wq", ...]}` (the train block's `lora = { ... }`, its
    patterns resolved to parameter names by the frontend), every function
    argument whose `lm.param` is a target W: `[in, out]` gets two new
    parameter arguments right after it,
    `W.lora_A: [in, R]` (`lm.init` uniform(-1/sqrt(in), 1/sqrt(in)), PEFT's
    kaiming-uniform) and `W.lora_B: [R, out]` (zeros), and each
    `%y = lm.matmul %x, %W` becomes `%y + (A / R) * ((%x @ A) @ B)` for its
    users. Every other parameter argument gets the unit attribute
    `lm.frozen` (PEFT freezes the whole base model), but for those named in
    the optional `trainable = [...]` (a new task head, PEFT's
    `modules_to_save`); a target is frozen even there. A target used any other way (an embedding, a transposed or left
    operand), one that is not a rank-2 float tensor, or one that no function
    has is an error. Runs before -lm-autodiff, so the adapters are ordinary
    trainable parameters; without lm.lora the module is left as it is. See
    docs/finetuning.md, "LoRA".
  }];
  let dependentDialects = ["::mlir::lm::LMDialect", "::mlir::func::FuncDialect"];
}

def LMEvalModePass : Pass<"lm-eval-mode", "mlir::ModuleOp"> {
  let summary = "Makes dropout the identity in every program but the train step";
  let description = [{
    Replaces every `lm.dropout` by its operand `x` in each `func.func`
    without the unit attribute `lm.train_step`: the objective (the plan's
    eval program), the models' forward programs, prefill and decode; and
    every `lm.biased_attention` with `dropout` > 0 by the op the frontend
    emits without it (`lm.attention` or `lm.masked_attention` when it has no
    bias, segments or scale of its own, else `lm.biased_attention` with rate
    0 and a rank-0 key), so eval programs are those of the model without
    attention dropout. So
    dropout is on when training and off everywhere else (PyTorch's
    `model.train()` / `model.eval()`). A dropout_key argument left unused
    stays an input of its program, so one data pipeline still feeds both
    train_step and eval. Runs right after -lm-autodiff. See docs/language.md.
  }];
  let dependentDialects = ["::mlir::lm::LMDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def LMFusePass : Pass<"lm-fuse", "mlir::ModuleOp"> {
  let summary = "Groups elementwise chains, bias reductions and GEMM epilogues into lm.fusion regions";
  let description = [{
    In every function body, forms `lm.fusion` regions (one generated kernel
    each) greedily from the end backwards: elementwise ops (add, sub, mul,
    div, neg, gelu, gelu_grad) over one iteration space with their
    broadcast operands; an `lm.sum_to` over leading dimensions with the
    elementwise producers of its operand; or the elementwise consumers of one
    `lm.matmul` (rank-2 rhs, lhs not transposed) as its epilogue. Values
    used outside a group become extra results. Layer norm, softmax,
    attention and cross-entropy are single kernels already and are left
    alone. See docs/fusion.md.
  }];
  let options = [
    Option<"maxOps", "max-ops", "unsigned", "64",
           "Largest number of ops in one fused region">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect"];
}

def LMFuseLinearCrossEntropyPass : Pass<"lm-fuse-linear-cross-entropy", "mlir::ModuleOp"> {
  let summary = "Fuses the output projection with the cross-entropy, chunked over rows";
  let description = [{
    Where `lm.matmul(h, w)` (lhs not transposed, `w` rank 2) gives logits
    read only by the loss: a train step's `lm.cross_entropy_with_grad` whose
    logits gradient is read only by its two matmuls (`dlogits @ w` for `dh`,
    and `dlogits^T h` or `h^T dlogits` over flattened rows for `dw`) becomes
    one `lm.linear_cross_entropy_with_grad`; a forward `lm.cross_entropy`
    becomes `lm.linear_cross_entropy`. Both run chunk by chunk over the rows,
    so the `[rows, V]` logits and their gradient are never stored (Liger
    Kernel's FusedLinearCrossEntropy). Runs in the optimize stage when fusion
    is on (`lmc --fusion=none` keeps the reference ops). See docs/fusion.md.
  }];
  let options = [
    Option<"chunkRows", "chunk-rows", "int64_t", "0",
           "Rows of one chunk; 0: the rule of contract/linear_cross_entropy.h (logits chunk about the size of the hidden states)">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect"];
}

def LMPackAttentionPass : Pass<"lm-pack-attention", "mlir::ModuleOp"> {
  let summary = "Attention reads q, k, v in place from the fused projection (no slices, no concat)";
  let description = [{
    Where an `lm.attention_stats` reads q, k, v as three side-by-side
    last-dimension slices covering one tensor (GPT-2's
    `qkv = x @ wqkv + bqkv`), and each `lm.attention_grad_stats` of it has
    its dq, dk, dv read only by their concatenation, the pair becomes
    `lm.packed_attention_stats(qkv)` and
    `lm.packed_attention_grad_stats(qkv, y, lse, dy)`, which returns the
    concatenation itself; a forward `lm.attention` of such slices becomes
    `lm.packed_attention`. The slices and concatenations disappear (no copies,
    no saved slices), with the same bits. Anything else (masked or biased
    attention, q, k, v of separate projections, RoPE'd slices, a grad whose
    dk is read elsewhere) is left as it is. The packed ops have CPU kernels
    only: the compile pipeline runs the pass, in the optimize stage before
    `-lm-fuse`, when fusion is on and the target is the CPU alone. See
    docs/fusion.md.
  }];
  let dependentDialects = ["::mlir::lm::LMDialect"];
}

//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

def LMMixedPrecisionPass : Pass<"lm-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Casts GEMM operands to bf16 or fp16 (fp32 accumulation); the rest stays fp32";
  let description = [{
    With `precision=bf16`, every `lm.matmul` of f32 operands in every
    function reads them through `lm.cast` to bf16 and keeps its f32 result
    (fp32 accumulation). Each value is cast once, right after its definition
    (a function argument at the top of the body), and the cast is shared by
    all its GEMM readers, so the backward's weight-gradient GEMMs read the
    forward's bf16 copies: those are the activations kept for the backward.
    Layer/RMS norms, softmax, attention, cross-entropy, reductions, the loss,
    parameters, gradients and the optimizer stay fp32. `precision=fp16` casts
    to f16 the same way, and requires every train step to take a
    `loss_scale` input (-lm-autodiff=loss-scale=1): fp16's range loses small
    gradients unless the backward is scaled. An `lm.all_gather` (with ZeRO
    stage 3's cut of the padding) that only a cast reads gathers the cast
    instead: the rank casts its part, right before the gather, and the ranks
    move bf16 (the same bits: a cast is elementwise). `precision=fp32` changes nothing. Runs in the optimize stage after
    -lm-fuse-linear-cross-entropy (the fused loss keeps its fp32 GEMMs) and
    before -lm-fuse, which fuses the casts into neighbouring kernels. See
    docs/mixed-precision.md.
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"", "bf16, fp16 (the train step must take a loss_scale input) or fp32">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect"];
}

//===----------------------------------------------------------------------===//
// Distributed training
//===----------------------------------------------------------------------===//

def LMDataParallelPass : Pass<"lm-data-parallel", "mlir::ModuleOp"> {
  let summary = "Makes every train step the program of one data-parallel rank";
  let description = [{
    With a module attribute `lm.mesh = {data = D, ...}` (D > 1; or the pass
    option `data`), every `lm.train_step` function becomes the program of one
    of D data-parallel ranks: the loss (result 0), every other scalar result
    and every parameter gradient (`lm.grad_of`) is replaced by its
    `lm.all_reduce` with `mean` over mesh axis 0 (data), so every rank holds
    the gradient of the global batch and the optimizer updates every replica
    identically. The gradients go in buckets of about `bucket_mb` MiB (lm.mesh
    or the option; 25 by default, as PyTorch DDP; 0: one per gradient), filled
    in the order the backward computes them: a bucket's all-reduces are placed
    together right after the op that computes its last gradient, so lmrt runs
    them as one collective while the backward goes on (docs/distributed.md,
    "Buckets and overlap"). The loss and the metrics are averaged right after
    the ops that compute them. The inputs already hold the
    rank's batch / D rows (the frontend elaborates the file at the local batch,
    docs/distributed.md). The all-reduce sums in rank order and divides by D,
    as gradient accumulation does over D micro-batches: DP over D ranks gives
    the bits of the 1-process run with accumulate = D. Without a mesh, or with
    D = 1, the module is left as it is. Under ZeRO stage 2 (`zero = 2` in
    lm.mesh, or the option `zero`) and stage 3 the gradients are left as the
    rank's own: -lm-zero-shard-params reduce-scatters each inside the train
    step into the slice its optimizer shard updates, so no rank holds a whole
    averaged gradient.
    See docs/distributed.md.
  }];
  let options = [
    Option<"data", "data", "int64_t", "0",
           "Data-parallel ranks (0: the module's lm.mesh, none without it)">,
    Option<"zero", "zero", "int64_t", "-1",
           "The ZeRO stage (-1: the module's lm.mesh, 0 without it); from 2 on the gradients are not all-reduced">,
    Option<"bucketMb", "bucket-mb", "double", "-1",
           "Gradient bucket size in MiB (-1: the module's lm.mesh bucket_mb, 25 without it; 0: one all-reduce "
           "per gradient)">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect", "::mlir::func::FuncDialect"];
}

def LMZeroShardParamsPass : Pass<"lm-zero-shard-params", "mlir::ModuleOp"> {
  let summary = "ZeRO stages 2 and 3: the train step reduce-scatters the gradients; stage 3 slices the parameters";
  let description = [{
    With `lm.mesh = {data = D, zero = 3, ...}` (D > 1; or the pass options
    `data` and `zero`), every `lm.param` argument of every function becomes
    the rank's slice of the parameter: its n elements in row-major order cut
    into D slices of ceil(n / D), rank 0 first, each padded to ceil(n / D)
    (`tensor<ceil(n/D) x f32>`; the whole type is kept in the argument
    attribute `lm.zero_logical`, which the plan records as the parameter's
    type). Right before each op that reads a parameter, an `lm.all_gather`
    over mesh axis 0 (then an `lm.slice` to n elements where D does not
    divide n, and an `lm.reshape`) rebuilds the whole tensor for that op
    alone: a parameter read in the forward and in the backward is gathered
    twice and freed after each use. The all-gathers are then prefetched: each
    op's move ahead to right before an earlier op that reads gathered
    parameters, as far as the gathers issued ahead at any op stay within
    `prefetch_mb` MiB (lm.mesh's `prefetch_mb`; 0, the default: none), in
    their order, so that lmrt runs them while the ops before compute. Every gradient result (`lm.grad_of`) of a
    train step becomes the rank's slice of the gradients' mean: flattened,
    padded with zeros (`lm.slice_grad`), `lm.reduce_scatter` over mesh axis 0
    (the rank-order sum), then `lm.div` by D: the arithmetic of
    -lm-data-parallel's all-reduce with `mean`, so the same bits for those
    elements. The reduce-scatters are bucketed as -lm-data-parallel's
    all-reduces are (`bucket_mb`): a bucket's side by side right after the op
    that computes its last gradient, which lmrt runs as one collective. Run after -lm-data-parallel (which, from zero = 2 on, leaves
    the gradients unreduced; an all-reduced gradient is an error), after CSE
    (which would merge a parameter's gathers into one value live across the
    step) and after -lm-fuse-linear-cross-entropy (whose pattern needs the
    forward and backward matmuls to read one weight value). On a data x
    tensor mesh the rank's local (tensor-parallel) parameters and gradients
    are what it slices, gathers and scatters, over the data axis alone; their
    lm.sharding stays. Under stage 2 only the gradients are rewritten so (the
    parameters stay whole, nothing is gathered): the train step returns the
    slices, and the whole local gradients are temporaries of the arena. Below
    stage 2, or with D <= 1, the module is left as it is. See
    docs/distributed.md, "Stage 2" and "Stage 3".
  }];
  let options = [
    Option<"data", "data", "int64_t", "0",
           "Data-parallel ranks (0: the module's lm.mesh, none without it)">,
    Option<"zero", "zero", "int64_t", "-1",
           "The ZeRO stage (-1: the module's lm.mesh, 0 without it); the pass runs from 2 on (3: the parameters too)">,
    Option<"bucketMb", "bucket-mb", "double", "-1",
           "Gradient bucket size in MiB (-1: the module's lm.mesh bucket_mb, 25 without it; 0: one reduce-scatter "
           "per gradient)">,
    Option<"prefetchMb", "prefetch-mb", "double", "-1",
           "Stage 3: the gathered MiB issued ahead of the ops that read them (-1: the module's lm.mesh "
           "prefetch_mb, 0 without it; 0: each gather right before its op)">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect", "::mlir::func::FuncDialect"];
}

def LMSpmdPass : Pass<"lm-spmd", "mlir::ModuleOp"> {
  let summary = "Partitions every function into one tensor-parallel rank's program (Megatron's layout)";
  let description = [{
    With a module attribute `lm.mesh = {tensor = T, ...}` (T > 1; or the pass
    option `tensor`), runs before `-lm-autodiff` and rewrites every function
    with parameters into the program of one of T ranks of mesh axis 1
    (tensor). Shardings come from the ops' sharding rules
    (ShardingOpInterface, dialect/IR/ShardingRules.cpp), starting from
    attention (split by heads) and from the loops only a parameter follows (a
    matmul's output columns), each kept only where the split closes in a
    contracting matmul: Megatron's column-parallel q/k/v and fc1, attention
    on the rank's heads, and row-parallel output projection and fc2, each of
    those followed by `lm.all_reduce` (sum) over mesh axis 1. Split values
    get their local types, attention its local head count, slices of a
    packed q|k|v projection their local bounds; each split parameter carries
    `lm.sharding = {split_axes = [[], [1]], segments = S}` (upstream mesh's
    split axes per dimension; `segments` when it is S equal parts each split
    alike). A dimension the mesh axis does not divide (heads, d_ff, d) is an
    error naming the tensor and the axis; a parameter split in one function
    and not in another is an error. With `sequence_parallel = true` in
    `lm.mesh` (or the option), every function without a key/value cache then
    runs the work between a row-parallel layer and the next column-parallel
    one (biases, residual adds, norms) on its part of the sequence: the
    row-parallel layer's all-reduce becomes an `lm.reduce_scatter` along
    dimension 1, the region's exits `lm.all_gather` (passes/SequenceParallel.cpp);
    a sequence the axis does not divide is an error. Without a mesh, or with
    T = 1, the module is left as it is. See docs/distributed.md.
  }];
  let options = [
    Option<"tensor", "tensor", "int64_t", "0",
           "Tensor-parallel ranks (0: the module's lm.mesh, none without it)">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "Sequence parallelism with the tensor axis (also lm.mesh's sequence_parallel)">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect", "::mlir::func::FuncDialect"];
}

def LMSpmdGradientsPass : Pass<"lm-spmd-gradients", "mlir::ModuleOp"> {
  let summary = "Completes the gradients of a tensor-parallel train step";
  let description = [{
    After `-lm-spmd` and `-lm-autodiff`: the backward of one tensor-parallel
    rank (the collectives' VJPs: a rank's cotangent is its part) computes
    the gradient of the sum of the T ranks' losses, which are equal. So in
    every `lm.train_step` function the gradient of a split parameter (one
    with `lm.sharding`) is multiplied by 1/T, and the gradient of a
    replicated parameter, of which each rank holds a part, becomes its
    `lm.all_reduce` with `mean` over mesh axis 1. The loss and the metrics
    are the same on every rank and are left alone. Without a tensor axis the
    module is left as it is.
  }];
  let options = [
    Option<"tensor", "tensor", "int64_t", "0",
           "Tensor-parallel ranks (0: the module's lm.mesh, none without it)">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect", "::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// Rematerialization
//===----------------------------------------------------------------------===//

def LMRematPass : Pass<"lm-remat", "mlir::ModuleOp"> {
  let summary = "Recomputes layers' forward values in the backward instead of keeping them";
  let description = [{
    In every `lm.train_step` function, clones forward ops of a layer (one copy
    of a `repeat`, named by the outermost NameLoc of the op's location) right
    before the first backward op that reads their value, and has the backward
    read the clone, so the forward value dies with its last forward use and
    the memory plan's peak falls. Policies: `none` (nothing), `full` (keep each
    layer's input, recompute the rest of the layer), `selective` (keep GEMM
    outputs, matmuls and fused matmul epilogues; recompute attention, norms
    and elementwise chains), `auto` (a minimum cut of the forward graph, saved
    bytes against recomputed FLOPs, GEMMs never recomputed, with the fewest
    FLOPs whose estimated activation peak fits `budget` bytes; if none fits,
    the non-GEMM values freeing the most bytes per recomputed FLOP, then whole
    layers as under full). Random ops (lm.sample) and values read outside
    their layer are never recomputed; keyed dropout may be (its mask is a pure
    function of its key). Runs after -lm-fuse, so a recomputed
    region is the same kernel: results are bit-identical. See docs/remat.md.
  }];
  let options = [
    Option<"policy", "policy", "std::string", "\"none\"", "none, full, selective or auto">,
    Option<"budget", "budget", "int64_t", "0",
           "auto: the bytes the train step's activations may peak at (lmc derives it from --mem-budget)">,
  ];
  let dependentDialects = ["::mlir::lm::LMDialect"];
}

def TestPrintRematPass : Pass<"test-print-remat", "mlir::ModuleOp"> {
  let summary = "Prints -lm-remat's decisions for every train step (for tests)";
  let description = [{
    For each `lm.train_step` function, prints to stdout one line per forward
    op of a layer: recompute (read by the backward, or feeding a recomputed
    value), keep (and why: layer output, gemm, random) or forward only; then
    the counts (under auto also the estimated activation peak before and
    after, and what the greedy chose). Leaves the IR unchanged.
  }];
  let options = [
    Option<"policy", "policy", "std::string", "\"full\"", "none, full, selective or auto">,
    Option<"budget", "budget", "int64_t", "0", "auto: the activation budget in bytes">,
  ];
}

def TestPrintLivenessPass : Pass<"test-print-liveness", "mlir::ModuleOp"> {
  let summary = "Prints the live intervals of every train step's values (for tests)";
  let description = [{
    For each `lm.train_step` function, prints the interval model -lm-remat's
    auto policy and budget estimate use (estimateActivationPeak): the
    estimated activation peak and the op where it is reached, then one line
    per value, `[first, last] bytes op (layer)`, marking those live at the
    peak. Run it after `-lm-remat` to see what a policy changes. Leaves the
    IR unchanged.
  }];
}

#endif // LM_PASSES_TD

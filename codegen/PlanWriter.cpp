//===- PlanWriter.cpp - lm module to runtime plan -------------------------===//
//
// Plan translation. Walks the functions of a trained module generically (op
// name minus "lm.", attribute dictionaries, tensor types) and produces the plan
// protobuf. Each function becomes a program: its arguments become PARAM/INPUT
// buffers, lm.constant ops CONSTANT buffers, a reshape of an arena value a view
// of its buffer, every other op one step whose results live in the program's
// arena (or, for the train step's gradients, directly in the parameter's GRAD
// buffer).
// See docs/compilation.md.
//
//===----------------------------------------------------------------------===//

#include "codegen/PlanWriter.h"

#include "codegen/KernelCompiler.h"
#include "codegen/KernelEmitter.h"
#include "codegen/MemoryPlanner.h"
#include "codegen/ModuleConfig.h"
#include "codegen/PlanConvert.h"
#include "codegen/RuntimeOps.h"
#include "contract/zero3.h"
#include "dialect/IR/LMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::lm;
namespace plan = lmrt::plan;
using lmrt::numElements;
using lmrt::typeBytes;

/// Recorded in Plan.compiler_version.
static constexpr llvm::StringLiteral kCompilerVersion = "lmc 0.1";

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

namespace {

/// The generated kernels of a plan, shared by its programs: one per distinct
/// body (the train step and eval fuse the forward alike).
class KernelTable {
public:
  /// The index of `body`'s kernel for `dtype` in Plan.kernels, adding it.
  int add(KernelBody body, StringRef dtype, plan::Plan &result) {
    std::string name = kernelName(body) + "_" + dtype.str();
    auto [it, inserted] = index.try_emplace(name, static_cast<int>(bodies.size()));
    if (!inserted)
      return it->second;
    bodies.push_back(std::make_unique<KernelBody>(std::move(body)));
    const KernelBody &b = *bodies.back();
    instances.push_back({kernelName(b), dtype.str(), &b});
    plan::Kernel *k = result.add_kernels();
    k->set_name(name);
    k->set_schedule(b.schedule == KernelSchedule::Elementwise    ? plan::Kernel::ELEMENTWISE
                    : b.schedule == KernelSchedule::ColumnReduce ? plan::Kernel::COLUMN_REDUCE
                                                                 : plan::Kernel::MATMUL_EPILOGUE);
    k->set_rows(b.rows);
    k->set_cols(b.cols);
    for (const plan::TensorType &t : b.args)
      *k->add_args() = t;
    k->set_num_inputs(b.numInputs);
    if (b.schedule == KernelSchedule::MatmulEpilogue) {
      k->set_product_arg(b.productArg);
      k->set_lhs_arg(b.lhsInput);
      k->set_rhs_arg(b.rhsInput);
      k->set_transpose_rhs(b.transposeRhs);
    }
    return it->second;
  }
  const std::vector<KernelInstance> &all() const { return instances; }

private:
  llvm::StringMap<int> index;
  std::vector<std::unique_ptr<KernelBody>> bodies;
  std::vector<KernelInstance> instances;
};

/// Which function a program comes from; decides its outputs.
/// (Prefill and Decode: incremental decoding, from @<model>.prefill/.decode;
/// Encode: an encoder-decoder model's cross-attention states, @<model>.encode.)
enum class ProgramKind { TrainStep, Eval, Forward, Prefill, Decode, Encode };

/// Builds one program from one function.
class ProgramBuilder {
public:
  ProgramBuilder(func::FuncOp func, ProgramKind kind, plan::Plan &result,
                 llvm::StringMap<plan::TensorType> &paramTypes, KernelTable &kernels)
      : func(func), kind(kind), result(result), paramTypes(paramTypes), kernels(kernels) {}

  FailureOr<plan::Program> build(StringRef name);

private:
  LogicalResult addArguments();
  void collectGradients(func::ReturnOp ret);
  /// `op` may write its result 0 over its operand 0 (LM_MayOverwriteOperand0)
  /// and nothing else reads that operand.
  static bool overwritesOperand0(Operation *op);
  /// Prefill and decode: the lm.state results, each the lm.cache_write of its
  /// own state argument, are written in place into that STATE buffer.
  LogicalResult collectStates(func::ReturnOp ret);
  /// A state argument: its STATE buffer, declaring the state in the plan (the
  /// first program) or checking it against the declaration (the second).
  FailureOr<int> addStateArgument(BlockArgument arg, StringRef name, const plan::TensorType &type);
  LogicalResult addConstant(Operation *op);
  LogicalResult addStep(Operation *op);
  LogicalResult addFusedStep(FusionOp op);
  /// A reshape of an arena value becomes a view of that value's buffer, with no
  /// step; false when it must stay a step (its operand is a parameter, input or
  /// constant, or its result is a gradient written into a GRAD buffer).
  bool addView(ReshapeOp op);
  /// The step reading `op`'s operands and writing a buffer per result (plus
  /// `extraOutputs` arena scratch buffers), without attributes.
  FailureOr<plan::Step> stepWithBuffers(Operation *op, StringRef opName, ArrayRef<plan::TensorType> extraOutputs);
  LogicalResult addOutputs(func::ReturnOp ret);
  LogicalResult addGradientOutput(func::ReturnOp ret, unsigned index, StringRef param);

  int addBuffer(plan::Buffer::Kind kind, const plan::TensorType &type, StringRef name = "") {
    plan::Buffer *buffer = program.add_buffers();
    buffer->set_kind(kind);
    *buffer->mutable_type() = type;
    buffer->set_size_bytes(typeBytes(type));
    if (!name.empty())
      buffer->set_name(name.str());
    return program.buffers_size() - 1;
  }

  func::FuncOp func;
  ProgramKind kind;
  plan::Plan &result;
  /// Parameter name -> the type the programs bind it at (its type, or ZeRO stage 3's
  /// slice), filled by the train step and checked by the others.
  llvm::StringMap<plan::TensorType> &paramTypes;
  KernelTable &kernels;
  plan::Program program;
  llvm::DenseMap<Value, int> bufferOf;
  /// Train step: op results returned as a gradient, written straight into the
  /// GRAD buffer of this parameter.
  llvm::DenseMap<Value, std::string> gradientOf;
  /// Train step: the parameters whose gradient is already an output.
  llvm::StringSet<> gradientOutputs;
  /// Prefill and decode: the results updating a state (each written into the
  /// STATE buffer that its cache_write reads as operand 0).
  llvm::DenseSet<Value> stateOf;
  bool inference() const {
    return kind == ProgramKind::Prefill || kind == ProgramKind::Decode || kind == ProgramKind::Encode;
  }
};

} // namespace

FailureOr<plan::Program> ProgramBuilder::build(StringRef name) {
  program.set_name(name.str());
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return func.emitError("plan contract: @") << func.getSymName() << " must have a body of one block", failure();
  if (failed(addArguments()))
    return failure();
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (!ret)
    return func.emitError("plan contract: @") << func.getSymName() << " must end in func.return", failure();
  if (kind == ProgramKind::TrainStep)
    collectGradients(ret);
  if (inference() && failed(collectStates(ret)))
    return failure();

  for (Operation &op : func.getBody().front().without_terminator()) {
    LogicalResult ok = isa<ConstantOp>(op)  ? addConstant(&op)
                       : isa<FusionOp>(op) ? addFusedStep(cast<FusionOp>(op))
                                           : addStep(&op);
    if (failed(ok))
      return failure();
  }
  if (failed(addOutputs(ret)))
    return failure();

  int64_t flops = 0;
  for (const plan::Step &step : program.steps())
    flops += step.flops();
  program.set_flops(flops);
  assignArenaOffsets(program);
  if (program.arena_bytes() > lmrt::kMaxArenaBytes)
    return func.emitError("plan contract: the values of @") << func.getSymName() << " need an arena of "
           << program.arena_bytes() << " bytes, more than the runtime's limit of 2^50",
           failure();
  std::string verdict = verifyMemoryPlan(program);
  if (!verdict.empty())
    return func.emitError("internal error: the memory plan of program '") << name << "' is unsound: " << verdict,
           failure();
  return std::move(program);
}

/// The ranks of the tensor axis of `func`'s module mesh (1 without one).
static int64_t tensorShards(func::FuncOp func) {
  if (auto module = func->getParentOfType<ModuleOp>())
    if (auto mesh = module->getAttrOfType<DictionaryAttr>("lm.mesh"))
      if (auto t = dyn_cast_or_null<IntegerAttr>(mesh.get("tensor")))
        return t.getInt();
  return 1;
}

/// Entry `key` of `func`'s module mesh (`dflt` without one).
static int64_t meshValue(func::FuncOp func, StringRef key, int64_t dflt) {
  if (auto module = func->getParentOfType<ModuleOp>())
    if (auto mesh = module->getAttrOfType<DictionaryAttr>("lm.mesh"))
      if (auto t = dyn_cast_or_null<IntegerAttr>(mesh.get(key)))
        return t.getInt();
  return dflt;
}

/// The type the train step returns a parameter's gradient at, the parameter bound at
/// `bound`: that type, or under ZeRO stage 2 the rank's padded slice of the flattened
/// tensor, which -lm-zero-shard-params reduce-scatters it to (contract/zero3.h's
/// boundGradType; stage 3 binds the parameter itself as the slice).
static plan::TensorType gradientType(func::FuncOp func, const plan::TensorType &bound) {
  const int64_t ranks = meshValue(func, "data", 1);
  if (meshValue(func, "zero", 0) != 2 || ranks <= 1)
    return bound;
  return lmrt::zeroSliceType(bound, ranks);
}

LogicalResult ProgramBuilder::addArguments() {
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto emit = [&] { return emitError(arg.getLoc()) << "plan contract: argument #" << i << " of @" << func.getSymName() << " "; };
    FailureOr<plan::TensorType> type = convertType(arg.getType(), emit);
    if (failed(type))
      return failure();

    if (auto param = func.getArgAttrOfType<StringAttr>(i, "lm.param")) {
      StringRef name = param.getValue();
      // ZeRO stage 3 (-lm-zero-shard-params): the argument is the rank's padded slice
      // of the flattened parameter, and lm.zero_logical keeps the whole type, which is
      // the plan's parameter's (contract/zero3.h; the contract checks the slice).
      plan::TensorType logicalType = *type;
      if (auto logical = func.getArgAttrOfType<TypeAttr>(i, "lm.zero_logical")) {
        FailureOr<plan::TensorType> whole = convertType(logical.getValue(), emit);
        if (failed(whole))
          return failure();
        logicalType = *whole;
      }
      if (type->dtype() == plan::I32)
        return emit() << "is parameter '" << name << "' of type " << arg.getType()
                      << "; parameters must be f32 or f64 (the optimizer updates them)";
      if (kind == ProgramKind::TrainStep) {
        if (!paramTypes.try_emplace(name, *type).second)  // the type the programs bind
          return emit() << "repeats parameter '" << name << "'";
        plan::Param *p = result.add_params();
        p->set_name(name.str());
        *p->mutable_type() = logicalType;
        // The train block's parameter groups (frontend/ParamGroups.cpp) say, where
        // it has them; else nanoGPT's rule: matrices and embeddings decay.
        auto decay = func.getArgAttrOfType<BoolAttr>(i, "lm.weight_decay");
        p->set_weight_decay(decay ? decay.getValue() : logicalType.shape_size() >= 2);
        p->set_frozen(func.getArgAttr(i, "lm.frozen") != nullptr);
        if (auto scale = func.getArgAttrOfType<FloatAttr>(i, "lm.lr_scale"))
          p->set_lr_scale(scale.getValueAsDouble());
        if (auto trust = func.getArgAttrOfType<BoolAttr>(i, "lm.trust_ratio"))
          p->set_trust_ratio(trust.getValue());
        if (auto sharding = func.getArgAttrOfType<DictionaryAttr>(i, "lm.sharding"))
          if (failed(convertSharding(sharding, tensorShards(func), *p->mutable_sharding(), emit)))
            return failure();
        if (failed(convertInit(func.getArgAttrOfType<DictionaryAttr>(i, "lm.init"), *p->mutable_init(), emit)))
          return failure();
      } else {
        auto known = paramTypes.find(name);
        if (known == paramTypes.end())
          return emit() << "is parameter '" << name << "', which the train step does not have";
        if (known->second.SerializeAsString() != type->SerializeAsString())
          return emit() << "is parameter '" << name << "' of type " << arg.getType()
                        << ", which differs from its type in the train step";
      }
      bufferOf[arg] = addBuffer(plan::Buffer::PARAM, *type, name);
      continue;
    }

    if (auto state = func.getArgAttrOfType<StringAttr>(i, "lm.state")) {
      if (!inference())
        return emit() << "is state '" << state.getValue()
                      << "'; only the prefill, decode and encode functions have state";
      FailureOr<int> id = addStateArgument(arg, state.getValue(), *type);
      if (failed(id))
        return failure();
      bufferOf[arg] = *id;
      continue;
    }

    if (auto input = func.getArgAttrOfType<StringAttr>(i, "lm.input")) {
      for (const plan::Input &other : program.inputs())
        if (other.name() == input.getValue())
          return emit() << "repeats input '" << input.getValue() << "'";
      plan::Input *in = program.add_inputs();
      in->set_name(input.str());
      *in->mutable_type() = *type;
      if (Attribute attr = func.getArgAttr(i, "lm.vocab")) {
        auto vocab = dyn_cast<IntegerAttr>(attr);
        if (!vocab || !vocab.getValue().isSignedIntN(64) || vocab.getValue().getSExtValue() <= 0)
          return emit() << "has lm.vocab = " << attr << "; it must be a positive integer (the bound on token ids)";
        if (type->dtype() != plan::I32)
          return emit() << "has lm.vocab but type " << arg.getType() << "; only i32 token ids have a vocabulary";
        in->set_vocab(vocab.getValue().getSExtValue());
      }
      if (Attribute attr = func.getArgAttr(i, "lm.ignore_index")) {
        auto ignore = dyn_cast<IntegerAttr>(attr);
        if (!ignore || !ignore.getValue().isSignedIntN(64) || type->dtype() != plan::I32)
          return emit() << "has lm.ignore_index = " << attr << "; it must be an integer on an i32 input";
        in->set_ignore_index(ignore.getValue().getSExtValue());
      }
      bufferOf[arg] = addBuffer(plan::Buffer::INPUT, *type, input.getValue());
      continue;
    }
    return emit() << "has neither lm.param nor lm.input; the runtime cannot fill it";
  }
  return success();
}

void ProgramBuilder::collectGradients(func::ReturnOp ret) {
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto gradOf = func.getResultAttrOfType<StringAttr>(i, "lm.grad_of");
    if (!gradOf)
      continue;
    // Only a value a step computes can be written into the GRAD buffer by that
    // step; arguments, constants and a second return of the same value are
    // copied (addGradientOutput).
    Operation *def = value.getDefiningOp();
    if (!def || def->getName().getStringRef() == "lm.constant" || gradientOf.count(value))
      continue;
    gradientOf[value] = gradOf.str();
    // A gradient computed over its operand 0's bytes (LM_MayOverwriteOperand0):
    // the operand's producer writes straight into the GRAD buffer too.
    for (Operation *op = cast<OpResult>(value).getResultNumber() == 0 ? def : nullptr;
         op && overwritesOperand0(op) && !gradientOf.count(op->getOperand(0));) {
      Operation *producer = op->getOperand(0).getDefiningOp();
      if (!producer || producer->getName().getStringRef() == "lm.constant")
        break;
      gradientOf[op->getOperand(0)] = gradOf.str();
      op = producer;
    }
  }
}

bool ProgramBuilder::overwritesOperand0(Operation *op) {
  return op->hasTrait<OpTrait::lm::MayOverwriteOperand0>() && op->getNumOperands() > 0 && op->getNumResults() > 0 &&
         op->getOperand(0).getType() == op->getResult(0).getType() && op->getOperand(0).hasOneUse();
}

FailureOr<int> ProgramBuilder::addStateArgument(BlockArgument arg, StringRef name, const plan::TensorType &type) {
  auto emit = [&] { return emitError(arg.getLoc()) << "plan contract: state '" << name << "' of @" << func.getSymName() << " "; };
  if (type.dtype() == plan::I32 || type.shape_size() != 3 || type.shape(0) != 1)
    return emit() << "has type " << arg.getType() << "; a state is a float [1, window, dim] cache", failure();
  const plan::State *declared = nullptr;
  for (const plan::State &s : result.states())
    if (s.name() == name)
      declared = &s;
  if (kind == ProgramKind::Prefill) {
    if (declared)
      return emit() << "is declared twice", failure();
    plan::State *s = result.add_states();
    s->set_name(name.str());
    *s->mutable_type() = type;
  } else if (!declared || declared->type().SerializeAsString() != type.SerializeAsString()) {
    return emit() << (declared ? "has a type that differs from the prefill function's" : "is not a state of the prefill function"),
           failure();
  }
  return addBuffer(plan::Buffer::STATE, type, name);
}

LogicalResult ProgramBuilder::collectStates(func::ReturnOp ret) {
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name = func.getResultAttrOfType<StringAttr>(i, "lm.state");
    if (!name)
      continue;
    // In place is sound only when the update is the state's one use: nothing
    // reads the old rows after cache_write has replaced them.
    auto write = value.getDefiningOp<CacheWriteOp>();
    auto arg = write ? dyn_cast<BlockArgument>(write.getCache()) : BlockArgument();
    auto argName = arg ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lm.state") : StringAttr();
    if (!argName || argName != name || !arg.hasOneUse() || stateOf.count(value))
      return ret.emitError("plan contract: result #") << i << " of @" << func.getSymName() << " updates state '"
             << name.getValue() << "'; it must be the one lm.cache_write of that state's argument", failure();
    stateOf.insert(value);
  }
  return success();
}

LogicalResult ProgramBuilder::addConstant(Operation *op) {
  auto emit = [&] { return op->emitError("plan contract: the constant "); };
  auto value = op->getAttrOfType<DenseElementsAttr>("value");
  if (op->getNumResults() != 1 || !value)
    return emit() << "must have one result and a dense 'value' attribute";
  FailureOr<plan::TensorType> type = convertType(op->getResult(0).getType(), emit);
  if (failed(type))
    return failure();
  FailureOr<std::string> bytes = constantBytes(value);
  if (failed(bytes) || static_cast<int64_t>(bytes->size()) != typeBytes(*type))
    return emit() << "has a value of type " << value.getType() << " that does not match its result type";
  int id = addBuffer(plan::Buffer::CONSTANT, *type);
  program.mutable_buffers(id)->set_data(std::move(*bytes));
  bufferOf[op->getResult(0)] = id;
  return success();
}

LogicalResult ProgramBuilder::addStep(Operation *op) {
  if (auto reshape = dyn_cast<ReshapeOp>(op); reshape && addView(reshape))
    return success();
  StringRef opName = op->getName().getStringRef();
  if (!opName.starts_with("lm."))
    return op->emitError("plan contract: '") << opName
           << "' has no runtime kernel; a plan runs lm ops only (calls must be inlined, see docs/dialect.md)";
  StringRef kernel = opName.drop_front(3);
  const RuntimeOpInfo *info = lookupRuntimeOp(kernel);
  if (!info)
    return op->emitError("plan contract: '") << opName << "' has no runtime kernel '" << kernel << "'";
  if (op->getNumOperands() != static_cast<unsigned>(info->numInputs) ||
      op->getNumResults() != static_cast<unsigned>(info->numOutputs))
    return op->emitError("plan contract: '") << opName << "' has " << op->getNumOperands() << " operands and "
           << op->getNumResults() << " results, but the runtime kernel '" << kernel << "' takes " << info->numInputs
           << " and produces " << info->numOutputs;
  if (op->getNumRegions() != 0)
    return op->emitError("plan contract: '") << opName << "' has regions, which a plan step cannot hold";

  FailureOr<plan::Step> built = stepWithBuffers(op, opName, {});
  if (failed(built))
    return failure();
  plan::Step step = std::move(*built);
  step.set_op(kernel.str());
  // The op's inherent attributes only, with its declared defaults filled in, so
  // the kernel sees the same values the dialect's verifier did. Discardable
  // attributes (notes, pass markers) are not the op's semantics: they stay out.
  NamedAttrList attrs;
  for (StringAttr attrName : op->getName().getAttributeNames())
    if (std::optional<Attribute> value = op->getInherentAttr(attrName); value && *value)
      attrs.append(attrName, *value);
  op->getName().populateDefaultAttrs(attrs);
  for (NamedAttribute attr : attrs) {
    FailureOr<plan::Attr> converted = convertAttr(attr.getValue());
    if (failed(converted))
      return op->emitError("plan contract: attribute '") << attr.getName().strref() << "' of '" << opName
             << "' is " << attr.getValue() << ", which has no plan form (integer, float, bool, string, array<i64>)";
    (*step.mutable_attrs())[attr.getName().str()] = std::move(*converted);
  }
  step.set_loc(formatLoc(op->getLoc()));
  // Every lm op that is a plan step states its cost (LMOpCosts.cpp).
  if (auto cost = dyn_cast<CostOpInterface>(op)) {
    step.set_flops(cost.getFlops());
    step.set_bytes(cost.getBytesAccessed());
  }
  *program.add_steps() = std::move(step);
  return success();
}

bool ProgramBuilder::addView(ReshapeOp op) {
  auto source = bufferOf.find(op.getOperand());
  if (source == bufferOf.end() || gradientOf.count(op.getResult()))
    return false;
  const plan::Buffer &of = program.buffers(source->second);
  if (of.kind() != plan::Buffer::ARENA)
    return false;
  auto emit = [&] { return op->emitError("plan contract: the reshape "); };
  FailureOr<plan::TensorType> type = convertType(op.getResult().getType(), emit);
  if (failed(type))
    return false;
  int root = of.has_view_of() ? of.view_of() : source->second;
  int id = addBuffer(plan::Buffer::ARENA, *type);
  program.mutable_buffers(id)->set_view_of(root);
  bufferOf[op.getResult()] = id;
  return true;
}

FailureOr<plan::Step> ProgramBuilder::stepWithBuffers(Operation *op, StringRef opName,
                                                     ArrayRef<plan::TensorType> extraOutputs) {
  plan::Step step;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto it = bufferOf.find(operand);
    if (it == bufferOf.end())
      return op->emitError("plan contract: operand #") << i << " of '" << opName
             << "' is not defined in @" << func.getSymName(), failure();
    step.add_inputs(it->second);
  }
  for (OpResult res : op->getResults()) {
    auto emit = [&] { return op->emitError("plan contract: result #") << res.getResultNumber() << " of '" << opName << "' "; };
    FailureOr<plan::TensorType> type = convertType(res.getType(), emit);
    if (failed(type))
      return failure();
    auto grad = gradientOf.find(res);
    int id = grad == gradientOf.end() ? addBuffer(plan::Buffer::ARENA, *type)
                                      : addBuffer(plan::Buffer::GRAD, *type, grad->second);
    // A state update writes its own state's buffer (the step's input 0), and so
    // does an op allowed to when nothing else reads that operand: an arena value,
    // or the GRAD buffer of the gradient it computes (collectGradients).
    bool overwrite = false;
    if (res.getResultNumber() == 0 && overwritesOperand0(op)) {
      const plan::Buffer &in0 = program.buffers(step.inputs(0));
      overwrite = grad == gradientOf.end() ? in0.kind() == plan::Buffer::ARENA && !in0.has_view_of()
                                           : in0.kind() == plan::Buffer::GRAD && in0.name() == grad->second;
    }
    if (stateOf.count(res) || overwrite) {
      program.mutable_buffers()->RemoveLast();
      id = step.inputs(0);
    }
    bufferOf[res] = id;
    step.add_outputs(id);
  }
  for (const plan::TensorType &type : extraOutputs)
    step.add_outputs(addBuffer(plan::Buffer::ARENA, type));
  return step;
}

LogicalResult ProgramBuilder::addFusedStep(FusionOp op) {
  FailureOr<KernelBody> body = emitKernelBody(op);
  if (failed(body))
    return failure();
  // An epilogue whose product is not a result writes it into a scratch buffer.
  SmallVector<plan::TensorType> scratch;
  size_t declared = op->getNumOperands() + op->getNumResults();
  for (size_t a = declared; a < body->args.size(); ++a)
    scratch.push_back(body->args[a]);
  FailureOr<plan::Step> built = stepWithBuffers(op, "lm.fusion", scratch);
  if (failed(built))
    return failure();
  plan::Step step = std::move(*built);
  step.set_op(lmrt::ops::kFusedOpName);
  step.set_flops(body->flops);
  // A fused kernel reads its inputs and writes its results once: the traffic
  // fusion leaves (its inner values stay in registers).
  step.set_bytes(mlir::lm::detail::operandAndResultBytes(op));
  std::string dtype = body->args[body->numInputs].dtype() == plan::F64 ? "f64" : "f32";
  plan::Attr kernel;
  kernel.set_i(kernels.add(std::move(*body), dtype, result));
  (*step.mutable_attrs())["kernel"] = kernel;
  step.set_loc(formatLoc(op->getLoc()));
  *program.add_steps() = std::move(step);
  return success();
}

LogicalResult ProgramBuilder::addGradientOutput(func::ReturnOp ret, unsigned index, StringRef param) {
  Value value = ret.getOperand(index);
  auto known = paramTypes.find(param);
  if (known == paramTypes.end())
    return ret.emitError("plan contract: result #") << index << " of @" << func.getSymName()
           << " is the gradient of '" << param << "', which is not a parameter";
  // A set, not a scan of the outputs: a scan per gradient made plan writing
  // quadratic in the number of parameters (1000 layers: 16,000 of them).
  if (!gradientOutputs.insert(param).second)
    return ret.emitError("plan contract: @") << func.getSymName() << " returns two gradients of '" << param << "'";
  int source = bufferOf.lookup(value);
  const plan::Buffer &buffer = program.buffers(source);
  const plan::TensorType expected = gradientType(func, known->second);
  if (buffer.type().SerializeAsString() != expected.SerializeAsString())
    return ret.emitError("plan contract: the gradient of '") << param << "' has type " << value.getType()
           << ", which differs from the parameter's type"
           << (expected.SerializeAsString() != known->second.SerializeAsString() ? " (its ZeRO stage 2 slice)" : "");

  int id = source;
  if (buffer.kind() != plan::Buffer::GRAD || buffer.name() != param) {
    // The value lives elsewhere (an argument, a constant, or another
    // parameter's gradient): copy it into this parameter's GRAD buffer.
    id = addBuffer(plan::Buffer::GRAD, expected, param);
    plan::Step *copy = program.add_steps();
    copy->set_op(lmrt::ops::kCopyOpName);
    copy->add_inputs(source);
    copy->add_outputs(id);
    copy->set_loc(formatLoc(ret.getLoc()));
  }
  plan::Output *out = program.add_outputs();
  out->set_name("grad:" + param.str());
  out->set_buffer(id);
  return success();
}

LogicalResult ProgramBuilder::addOutputs(func::ReturnOp ret) {
  StringRef valueName = kind == ProgramKind::Forward || inference() ? "logits" : "loss";
  int named = 0;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    if (inference() && func.getResultAttr(i, "lm.state"))
      continue; // written in place (collectStates)
    if (kind == ProgramKind::TrainStep) {
      if (auto gradOf = func.getResultAttrOfType<StringAttr>(i, "lm.grad_of")) {
        if (failed(addGradientOutput(ret, i, gradOf.getValue())))
          return failure();
        continue;
      }
    }
    if (auto metric = func.getResultAttrOfType<StringAttr>(i, "lm.metric"); metric && kind == ProgramKind::Eval) {
      // The runtime averages each metric over the evaluation batches.
      auto type = dyn_cast<RankedTensorType>(value.getType());
      if (!type || !isa<FloatType>(type.getElementType()) || type.getRank() != 0)
        return ret.emitError("plan contract: metric '") << metric.getValue() << "' of @" << func.getSymName()
               << " has type " << value.getType() << ", expected a float scalar";
      plan::Output *out = program.add_outputs();
      out->set_name("metric:" + metric.getValue().str());
      out->set_buffer(bufferOf.lookup(value));
      continue;
    }
    if (kind == ProgramKind::Forward) {
      // A model returning several values names each (lm.output); one result is "logits".
      auto output = func.getResultAttrOfType<StringAttr>(i, "lm.output");
      auto type = dyn_cast<RankedTensorType>(value.getType());
      if (!type || !isa<FloatType>(type.getElementType()))
        return ret.emitError("plan contract: the ")
               << (output ? "output '" + output.getValue().str() + "'" : std::string("logits")) << " returned by @"
               << func.getSymName() << " has type " << value.getType() << ", expected a float tensor";
      if (!output && ret.getNumOperands() != 1)
        return ret.emitError("plan contract: @") << func.getSymName()
               << " returns several values; each needs an lm.output name";
      plan::Output *out = program.add_outputs();
      out->set_name(output ? output.getValue().str() : "logits");
      out->set_buffer(bufferOf.lookup(value));
      ++named;
      continue;
    }
    if (++named > 1)
      return ret.emitError("plan contract: @") << func.getSymName() << " must return exactly one " << valueName
             << (kind == ProgramKind::TrainStep ? " (besides the lm.grad_of gradients)" : "") << ", it returns more";
    // The runtime reads the loss as a float scalar and samples from float logits.
    auto type = dyn_cast<RankedTensorType>(value.getType());
    bool isLoss = valueName == "loss";
    if (!type || !isa<FloatType>(type.getElementType()) || (isLoss && type.getRank() != 0))
      return ret.emitError("plan contract: the ") << valueName << " returned by @" << func.getSymName()
             << " has type " << value.getType() << ", expected a " << (isLoss ? "scalar " : "") << "float tensor";
    plan::Output *out = program.add_outputs();
    out->set_name(valueName.str());
    out->set_buffer(bufferOf.lookup(value));
  }
  if (named == 0 && kind != ProgramKind::Encode) // encode writes its states and returns nothing else
    return ret.emitError("plan contract: @") << func.getSymName() << " returns no " << valueName;
  if (named > 0 && kind == ProgramKind::Encode)
    return ret.emitError("plan contract: @") << func.getSymName() << " returns more than its states";
  if (kind == ProgramKind::TrainStep)
    for (const plan::Param &p : result.params())
      if (!p.frozen() && !gradientOutputs.contains(p.name()))
        return ret.emitError("plan contract: @") << func.getSymName() << " returns no gradient for parameter '"
               << p.name() << "' (an lm.grad_of result)";
  return success();
}

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

/// The unique function of `module` carrying `attr` (and not `unless`); null when
/// there is none, failure (reported) when there are several.
static FailureOr<func::FuncOp> findFunc(ModuleOp module, StringRef attr, StringRef unless = "") {
  func::FuncOp found;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr(attr) || (!unless.empty() && func->hasAttr(unless)))
      continue;
    if (found) {
      InFlightDiagnostic diag = func.emitError("plan contract: more than one function carries ")
                                << attr << " (@" << found.getSymName() << " and @" << func.getSymName()
                                << "); a plan holds one of each program";
      diag.attachNote(found.getLoc()) << "the first one is here";
      return failure();
    }
    found = func;
  }
  return found;
}

/// With lm.data, the causal data pipeline feeds each program one token input
/// (the plan contract's expectedTokenInput and tokenVocabFits); here the error
/// points at the argument.
static LogicalResult checkDataInput(func::FuncOp func, const plan::Program &program, const plan::DataConfig &data) {
  if (data.transform() != "causal") {
    // Other transforms feed train_step and eval named inputs (the contract's
    // expectedPipelineInput); forward is the model alone, for causal sampling.
    if (lmrt::contract::isForwardProgram(program.name()) || program.name() == "prefill" ||
        program.name() == "decode" || program.name() == "encode")
      return success();
    for (BlockArgument arg : func.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lm.input");
      if (!name)
        continue;
      for (const plan::Input &in : program.inputs())
        if (in.name() == name.getValue()) {
          std::string want = lmrt::contract::expectedPipelineInput(in, data);
          if (!want.empty())
            return emitError(arg.getLoc()) << "plan contract: input '" << in.name() << "' of @"
                                           << func.getSymName() << " has type " << arg.getType()
                                           << ", but data transform '" << data.transform() << "' feeds " << want,
                   failure();
        }
    }
    return success();
  }
  // prefill and decode read tokens and the offset (the contract's checkInference).
  if (program.name() == "prefill" || program.name() == "decode")
    return success();
  // A model reading more than the tokens (a mask) is not sampled from.
  if (lmrt::contract::isForwardProgram(program.name()) && program.inputs_size() != 1)
    return success();
  std::vector<const plan::Input *> dataInputs = lmrt::contract::dataInputs(program);
  if (dataInputs.size() != 1)
    return func.emitError("plan contract: with lm.data, @") << func.getSymName()
           << " must read exactly one token input (an lm.input argument), it reads " << dataInputs.size(),
           failure();
  const plan::Input &in = *dataInputs[0];
  BlockArgument arg = *llvm::find_if(func.getArguments(), [&](BlockArgument a) {
    auto name = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), "lm.input");
    return name && name.getValue() == in.name();
  });
  std::string want = lmrt::contract::expectedTokenInput(program.name(), in.type(), data);
  if (!want.empty())
    return emitError(arg.getLoc()) << "plan contract: token input '" << in.name() << "' of @" << func.getSymName()
           << " has type " << arg.getType() << ", but lm.data (batch " << data.batch() << ", seq " << data.seq()
           << ") feeds it " << want,
           failure();
  if (!lmrt::contract::tokenVocabFits(in, data))
    return emitError(arg.getLoc()) << "plan contract: token input '" << in.name() << "' of @" << func.getSymName()
           << " accepts ids below lm.vocab = " << in.vocab() << ", but lm.data has vocab " << data.vocab(),
           failure();
  // Dropout keys a row by its sample: its tensors' rows are the batch's.
  for (const plan::Input &key : program.inputs())
    if (lmrt::contract::isDropoutKey(key) && !lmrt::contract::expectedDropoutKey(key, in.type().shape(0)).empty())
      return func.emitError("plan contract: @") << func.getSymName() << " applies dropout to tensors of "
             << key.type().shape(0) << " rows, but its batch has " << in.type().shape(0)
             << "; dropout's first dimension must be the batch (each row's mask is keyed by its sample)",
             failure();
  return success();
}

/// One kernel library per requested target, holding the kernels' source for
/// it. Its image is kernel compilation's (compilePlanKernels); until then it is
/// empty, with the checksum of the empty image, so that the translated plan is
/// whole for the contract check.
static LogicalResult addKernelSources(ModuleOp module, const std::vector<KernelInstance> &kernels,
                                      const PlanTranslationOptions &options, plan::Plan &result) {
  if (kernels.empty())
    return success();
  SmallVector<KernelTarget> targets;
  if (options.targetCpu)
    targets.push_back(KernelTarget::Cpu);
  if (options.targetCuda)
    targets.push_back(KernelTarget::Cuda);
  if (targets.empty())
    return module.emitError("codegen: the plan has generated kernels but no target to compile them for"), failure();
  for (KernelTarget target : targets) {
    plan::KernelLibrary *lib = result.add_kernel_libraries();
    lib->set_target(getKernelTargetName(target).str());
    lib->set_source(writeKernelSource(kernels, target == KernelTarget::Cuda));
    setKernelImage(*lib, "");
  }
  return success();
}

FailureOr<plan::Plan> mlir::lm::translateModuleToPlan(ModuleOp module, const PlanTranslationOptions &options) {
  FailureOr<func::FuncOp> trainStep = findFunc(module, "lm.train_step");
  FailureOr<func::FuncOp> objective = findFunc(module, "lm.objective", "lm.train_step");
  // Every model is a forward program: "forward" when there is one,
  // "forward:<model>" for each of several (docs/plan-format.md).
  SmallVector<func::FuncOp> models;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr("lm.model"))
      models.push_back(func);
  FailureOr<func::FuncOp> prefill = findFunc(module, "lm.prefill");
  FailureOr<func::FuncOp> decode = findFunc(module, "lm.decode");
  FailureOr<func::FuncOp> encode = findFunc(module, "lm.encode");
  if (failed(trainStep) || failed(objective) || failed(prefill) || failed(decode) || failed(encode))
    return failure();
  if (*encode && !*prefill)
    return encode->emitError("plan contract: an lm.encode function needs the lm.prefill and lm.decode functions "
                             "of its decoder"),
           failure();
  if (!*prefill != !*decode)
    return module.emitError("plan contract: a module with an lm.prefill function needs an lm.decode function "
                            "and the other way round"),
           failure();
  if (!*objective)
    return module.emitError("plan contract: no objective (a func.func with the lm.objective attribute)"), failure();
  if (!*trainStep)
    return module.emitError("plan contract: no train step (a func.func with the lm.train_step attribute); "
                            "run the module through -lm-autodiff"),
           failure();

  plan::Plan result;
  result.set_source(options.sourcePath);
  result.set_objective(objective->getSymName().str());
  std::vector<std::string> programNames;
  for (func::FuncOp m : models) {
    programNames.push_back(models.size() == 1 ? std::string("forward") : "forward:" + m.getSymName().str());
    result.set_model(result.model() + (result.model().empty() ? "" : ",") + m.getSymName().str());
  }
  if (*prefill && models.size() > 1)
    return prefill->emitError("plan contract: decode programs need a plan with one model, this one has ")
           << models.size(), failure();
  result.set_compiler_version(kCompilerVersion.str());
  if (failed(readModuleConfig(module, result)))
    return failure();

  llvm::StringMap<plan::TensorType> paramTypes;
  KernelTable kernels;
  struct Job {
    func::FuncOp func;
    ProgramKind kind;
    StringRef name;
  };
  // The train step first: it declares the parameters the others are checked against.
  SmallVector<Job> jobs = {{*trainStep, ProgramKind::TrainStep, "train_step"}, {*objective, ProgramKind::Eval, "eval"}};
  for (auto [m, name] : llvm::zip(models, programNames))
    jobs.push_back({m, ProgramKind::Forward, name});
  // Prefill before decode: it declares the states decode is checked against.
  if (*prefill) {
    jobs.push_back({*prefill, ProgramKind::Prefill, "prefill"});
    jobs.push_back({*decode, ProgramKind::Decode, "decode"});
  }
  // After prefill, which declares the states it writes too.
  if (*encode)
    jobs.push_back({*encode, ProgramKind::Encode, "encode"});
  for (const Job &job : jobs) {
    FailureOr<plan::Program> program = ProgramBuilder(job.func, job.kind, result, paramTypes, kernels).build(job.name);
    if (failed(program) || (result.has_data() && failed(checkDataInput(job.func, *program, result.data()))))
      return failure();
    *result.add_programs() = std::move(*program);
  }
  if (failed(readModuleExports(module, result)))
    return failure();

  if (failed(addKernelSources(module, kernels.all(), options, result)))
    return failure();

  // Plan-level facts, all from the train step (what `lmrt run` executes).
  const plan::Program &train = result.programs(0);
  *result.mutable_inputs() = train.inputs();
  int64_t paramCount = 0;
  for (const plan::Param &p : result.params()) paramCount += numElements(p.type());
  result.set_param_count(paramCount);
  result.set_flops_per_step(train.flops());
  result.set_predicted_peak_bytes(lmrt::predictedMemory(result).total());

  // The whole plan against the contract lmrt loads it with. Every check above
  // reports at the source; this one catches a writer bug before a plan leaves
  // lmc (steps' shapes were checked by the dialect's verifiers).
  std::string broken = lmrt::contract::checkPlan(result);
  if (!broken.empty())
    return module.emitError("internal error: lmc wrote a plan that breaks the plan contract: ") << broken,
           failure();
  return result;
}

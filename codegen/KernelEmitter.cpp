//===- KernelEmitter.cpp - One kernel body per lm.fusion region -----------===//
//
// A small emitter of our own rather than linalg -> scf -> EmitC: the regions
// are straight-line elementwise code over one static iteration space, so each
// op is one C++ expression, and what matters is the indexing (broadcast
// operands read through the cheapest index: the column, a row modulo, or a
// general stride walk) and the two wrappers around one body. docs/fusion.md
// says why in more detail.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelEmitter.h"

#include "codegen/PlanConvert.h"
#include "dialect/IR/LMOps.h"
#include "base/hash.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::lm;

namespace {

/// The text of contract/scalar_math.h, embedded at build time.
const char kPrelude[] =
#include "codegen/ScalarMathPrelude.inc"
    ;

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

ArrayRef<int64_t> shapeOf(Value v) { return llvm::cast<ShapedType>(v.getType()).getShape(); }

/// The C++ storage type a body reads or writes `v` through: the kernel's
/// template type `T` (f32 or f64, the kernel's instance), or the fixed
/// reduced-precision type of a bf16 or f16 value (-lm-mixed-precision), which
/// loads to the accumulation type and stores rounded to nearest even.
const char *storageOf(Value v) {
  Type elt = llvm::cast<ShapedType>(v.getType()).getElementType();
  return elt.isBF16() ? "lmc::bf16" : elt.isF16() ? "lmc::f16" : "T";
}

/// Writes the body of one region.
class BodyWriter {
public:
  BodyWriter(FusionOp op, KernelBody &kernel, ArrayRef<int64_t> space)
      : op(op), kernel(kernel), space(space.begin(), space.end()) {}

  LogicalResult write();

private:
  /// The C++ index into an input of shape `shape` at point (r, c).
  std::string indexFor(ArrayRef<int64_t> shape);
  FailureOr<std::string> valueName(Value v);
  FailureOr<std::string> expression(Operation *inner);

  FusionOp op;
  KernelBody &kernel;
  SmallVector<int64_t> space;
  llvm::DenseMap<Value, std::string> names;
  std::string lines;
  bool needsFlatIndex = false;
  unsigned next = 0;
};

std::string BodyWriter::indexFor(ArrayRef<int64_t> shape) {
  int64_t n = product(shape), cols = kernel.cols;
  if (ArrayRef<int64_t>(space) == shape) {
    needsFlatIndex = kernel.rows > 1;
    return kernel.rows > 1 ? "i" : "c";
  }
  if (n == 1)
    return "0";
  // Broadcast along leading dims only: the operand is the trailing part of
  // the iteration space (a bias, a position table).
  size_t lead = 0;
  while (lead < shape.size() && shape[lead] == 1)
    ++lead;
  ArrayRef<int64_t> trailing = shape.drop_front(lead);
  if (trailing.size() <= space.size() && ArrayRef<int64_t>(space).take_back(trailing.size()) == trailing) {
    if (n == cols)
      return "c";
    if (n % cols == 0)
      return llvm::formatv("(r % {0}) * {1} + c", n / cols, cols).str();
  }
  // General: decompose the flat index, skipping broadcast dims.
  needsFlatIndex = true;
  std::string expr;
  int64_t spaceStride = 1, srcStride = 1;
  for (size_t k = 0; k < space.size(); ++k) {
    size_t d = space.size() - 1 - k;
    int64_t srcDim = k < shape.size() ? shape[shape.size() - 1 - k] : 1;
    if (srcDim != 1) {
      if (!expr.empty())
        expr += " + ";
      expr += llvm::formatv("((i / {0}) % {1}) * {2}", spaceStride, space[d], srcStride).str();
    }
    spaceStride *= space[d];
    srcStride *= srcDim;
  }
  return expr.empty() ? "0" : "(" + expr + ")";
}

FailureOr<std::string> BodyWriter::valueName(Value v) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  auto arg = llvm::dyn_cast<BlockArgument>(v);
  if (!arg)
    return op.emitError("internal error: a fused value is used before it is computed"), failure();
  std::string name = "v" + std::to_string(next++);
  lines += llvm::formatv("  const A {0} = lmc::load(((const {1} *)p[{2}])[{3}]);\n", name, storageOf(v),
                         arg.getArgNumber(), indexFor(shapeOf(v)))
               .str();
  names[v] = name;
  return name;
}

FailureOr<std::string> BodyWriter::expression(Operation *inner) {
  SmallVector<std::string> a;
  for (Value operand : inner->getOperands()) {
    FailureOr<std::string> n = valueName(operand);
    if (failed(n))
      return failure();
    a.push_back(*n);
  }
  // A cast to bf16 or f16 rounds the value as storing it would, so a value
  // read after a fused cast is the one an unfused cast would have stored; a
  // cast to f32 is exact (the operand was loaded to A already).
  if (auto cast = dyn_cast<CastOp>(inner)) {
    const char *to = storageOf(cast.getResult());
    return StringRef(to) == "T" ? a[0] : llvm::formatv("lmc::load(lmc::store<{0}>({1}))", to, a[0]).str();
  }
  auto elementwise = dyn_cast<ElementwiseOpInterface>(inner);
  if (!elementwise)
    return inner->emitError("codegen: '") << inner->getName() << "' has no scalar form in a fused kernel",
           failure();
  // Substitute $0, $1, ... in the op's scalar form (from its ODS definition).
  StringRef form = elementwise.getScalarForm();
  std::string expr;
  for (size_t k = 0; k < form.size(); ++k) {
    if (form[k] == '$' && k + 1 < form.size() && llvm::isDigit(form[k + 1])) {
      unsigned index = form[++k] - '0';
      if (index >= a.size())
        return inner->emitError("internal error: the scalar form '") << form << "' names operand $" << index,
               failure();
      expr += a[index];
    } else {
      expr += form[k];
    }
  }
  return expr;
}

LogicalResult BodyWriter::write() {
  Block &block = op.getBody().front();
  auto yield = cast<YieldOp>(block.getTerminator());
  for (Operation &inner : block.without_terminator()) {
    if (auto mm = dyn_cast<MatmulOp>(inner)) {
      std::string name = "v" + std::to_string(next++);
      lines += llvm::formatv("  const A {0} = lmc::load(((const T *)p[{1}])[{2}]);\n", name, kernel.productArg,
                             indexFor(shapeOf(mm.getResult())))
                   .str();
      names[mm.getResult()] = name;
      continue;
    }
    if (auto sum = dyn_cast<SumToOp>(inner)) {
      FailureOr<std::string> x = valueName(sum.getX());
      if (failed(x))
        return failure();
      lines += llvm::formatv("  red[{0} * stride] += {1};\n", kernel.reduceArgs.size(), *x).str();
      auto uses = llvm::make_filter_range(yield->getOpOperands(),
                                          [&](OpOperand &u) { return u.get() == sum.getResult(); });
      if (std::distance(uses.begin(), uses.end()) != 1)
        return sum.emitError("internal error: a fused reduction must be yielded exactly once"), failure();
      kernel.reduceArgs.push_back(kernel.numInputs + (*uses.begin()).getOperandNumber());
      continue;
    }
    FailureOr<std::string> expr = expression(&inner);
    if (failed(expr))
      return failure();
    std::string name = "v" + std::to_string(next++);
    lines += "  const A " + name + " = " + *expr + ";\n";
    names[inner.getResult(0)] = name;
  }
  for (OpOperand &out : yield->getOpOperands()) {
    Operation *def = out.get().getDefiningOp();
    if (def && isa<SumToOp, MatmulOp>(def))
      continue;  // accumulated by the wrapper / written by the GEMM
    // A yielded cast stores its operand: storing rounds it as the cast's expression
    // does, and rounding twice gives the same bits (store(load(store(x))) ==
    // store(x)), so the kernel converts once (the casts of bf16 plans were
    // compute-bound on the conversion).
    Value stored = out.get();
    if (auto cast = dyn_cast_or_null<CastOp>(def))
      stored = cast.getX();
    FailureOr<std::string> v = valueName(stored);
    if (failed(v))
      return failure();
    const char *type = storageOf(out.get());
    lines += llvm::formatv("  (({0} *)p[{1}])[{2}] = lmc::store<{0}>({3});\n", type,
                           kernel.numInputs + out.getOperandNumber(), indexFor(shapeOf(out.get())), *v)
                 .str();
  }
  std::string head = "template <typename T>\nLMC_HD void LMC_BODY(void *const *p, int64_t r, int64_t c";
  head += kernel.schedule == KernelSchedule::ColumnReduce ? ", lmc::acc_t<T> *red, int64_t stride) {\n"
                                                          : ") {\n";
  head += "  using A = lmc::acc_t<T>;\n";
  head += needsFlatIndex ? llvm::formatv("  const int64_t i = r * {0} + c;\n", kernel.cols).str()
                         : "  (void)r;\n";
  kernel.text = head + lines + "}\n";
  return success();
}

} // namespace

FailureOr<KernelBody> mlir::lm::emitKernelBody(FusionOp op) {
  KernelBody kernel;
  Block &block = op.getBody().front();
  MatmulOp matmul;
  SmallVector<SumToOp> sums;
  SmallVector<int64_t> space;
  for (Operation &inner : block.without_terminator()) {
    if (auto mm = dyn_cast<MatmulOp>(inner)) {
      if (matmul)
        return mm.emitError("codegen: a fused region holds at most one matmul"), failure();
      matmul = mm;
    } else if (auto sum = dyn_cast<SumToOp>(inner)) {
      sums.push_back(sum);
    } else if (space.empty() && inner.getNumResults() == 1) {
      ArrayRef<int64_t> s = shapeOf(inner.getResult(0));
      space.assign(s.begin(), s.end());
    }
    if (auto cost = dyn_cast<CostOpInterface>(inner))
      kernel.flops += cost.getFlops();
  }
  if (matmul && !sums.empty())
    return op.emitError("codegen: a matmul epilogue cannot also reduce"), failure();

  auto emit = [&] { return op.emitError("codegen: a fused value "); };
  for (Value v : op.getInputs()) {
    FailureOr<lmrt::plan::TensorType> t = convertType(v.getType(), emit);
    if (failed(t))
      return failure();
    kernel.args.push_back(*t);
  }
  kernel.numInputs = kernel.args.size();
  for (Value v : op.getResults()) {
    FailureOr<lmrt::plan::TensorType> t = convertType(v.getType(), emit);
    if (failed(t))
      return failure();
    kernel.args.push_back(*t);
  }

  if (matmul) {
    kernel.schedule = KernelSchedule::MatmulEpilogue;
    ArrayRef<int64_t> s = shapeOf(matmul.getResult());
    space.assign(s.begin(), s.end());
    auto lhs = llvm::dyn_cast<BlockArgument>(matmul.getLhs());
    auto rhs = llvm::dyn_cast<BlockArgument>(matmul.getRhs());
    if (!lhs || !rhs || matmul.getTransposeLhs() || matmul.getRhs().getType().getRank() != 2)
      return matmul.emitError("codegen: an epilogue matmul must read region inputs, with a rank-2 rhs and no "
                              "transposed lhs"),
             failure();
    kernel.lhsInput = lhs.getArgNumber();
    kernel.rhsInput = rhs.getArgNumber();
    kernel.transposeRhs = matmul.getTransposeRhs();
    auto yield = cast<YieldOp>(block.getTerminator());
    for (OpOperand &out : yield->getOpOperands())
      if (out.get() == matmul.getResult())
        kernel.productArg = kernel.numInputs + out.getOperandNumber();
    // An internal product goes into a result of its type, which the body then
    // overwrites point by point (each point's loads come before its stores): the
    // GEMM's block is read back while it is in cache and written in place, where a
    // scratch buffer made the stores miss (GPT-2 small's forward GEMMs: 10 % more
    // time in their epilogues). With no such result: a scratch argument.
    if (kernel.productArg < 0)
      for (OpOperand &out : yield->getOpOperands())
        if (out.get().getType() == matmul.getType()) {
          kernel.productArg = kernel.numInputs + out.getOperandNumber();
          break;
        }
    if (kernel.productArg < 0) {
      FailureOr<lmrt::plan::TensorType> t = convertType(matmul.getType(), emit);
      if (failed(t))
        return failure();
      kernel.productArg = kernel.args.size();
      kernel.args.push_back(*t);
    }
    kernel.cols = space.empty() ? 1 : space.back();
    kernel.rows = product(space) / std::max<int64_t>(kernel.cols, 1);
  } else if (!sums.empty()) {
    kernel.schedule = KernelSchedule::ColumnReduce;
    ArrayRef<int64_t> s = shapeOf(sums.front().getX());
    space.assign(s.begin(), s.end());
    kernel.cols = product(shapeOf(sums.front().getResult()));
    for (SumToOp sum : sums)
      if (product(shapeOf(sum.getResult())) != kernel.cols || shapeOf(sum.getX()) != ArrayRef<int64_t>(space))
        return sum.emitError("codegen: the reductions of one fused region must share their shapes"), failure();
    kernel.rows = product(space) / std::max<int64_t>(kernel.cols, 1);
  } else {
    kernel.schedule = KernelSchedule::Elementwise;
    kernel.cols = space.empty() ? 1 : space.back();
    kernel.rows = product(space) / std::max<int64_t>(kernel.cols, 1);
  }
  if (product(space) == 0)
    return op.emitError("codegen: a fused region over zero elements"), failure();

  BodyWriter writer(op, kernel, space);
  if (failed(writer.write()))
    return failure();
  return kernel;
}

std::string mlir::lm::kernelName(const KernelBody &body) {
  std::string key = body.text + "|" + std::to_string(static_cast<int>(body.schedule)) + "|" +
                    std::to_string(body.rows) + "x" + std::to_string(body.cols);
  for (int a : body.reduceArgs)
    key += "|" + std::to_string(a);
  // The signature too: two epilogues with one body may read GEMMs of other K.
  for (const lmrt::plan::TensorType &t : body.args)
    key += "|" + t.SerializeAsString();
  key += llvm::formatv("|{0}|{1}|{2}|{3}", body.productArg, body.lhsInput, body.rhsInput, body.transposeRhs).str();
  return llvm::formatv("lmc_k{0:x-16}", lmrt::fnv1a64(key.data(), key.size())).str();
}

std::string mlir::lm::bodyName(const KernelBody &body) {
  return llvm::formatv("body_{0:x-16}", lmrt::fnv1a64(body.text.data(), body.text.size())).str();
}

std::string mlir::lm::entrySymbol(const KernelInstance &kernel) { return kernel.name + "_" + kernel.dtype; }

namespace {

const char *storageType(StringRef dtype) {
  if (dtype == "f64")
    return "double";
  if (dtype == "bf16")
    return "lmc::bf16";
  if (dtype == "f16")
    return "lmc::f16";
  return "float";
}

/// Column block of the CPU column-reduce entry: the accumulators of one block
/// (4 KiB a reduction in f32) stay in L1 while the rows stream by, and each
/// row's segment is long enough for the hardware prefetcher (256-column
/// blocks, 1 KiB segments 12 KiB apart, took 12-20 % longer on GPT shapes).
constexpr int64_t kColumnChunk = 1024;

std::string cpuEntry(const KernelInstance &k, StringRef dtype, StringRef body) {
  const KernelBody &b = *k.body;
  std::string sym = k.name + "_" + dtype.str(), T = storageType(dtype);
  std::string s;
  if (b.schedule != KernelSchedule::ColumnReduce) {
    // Flat points [begin, end) walked as row segments: the inner loop runs
    // over columns, so bias operands index by the column and it vectorises.
    s += llvm::formatv("LMC_CPU_ENTRY void {0}(void *const *p, int64_t begin, int64_t end) {{\n"
                       "  for (int64_t i = begin; i < end;) {{\n"
                       "    const int64_t r = i / {1}, c0 = i - r * {1};\n"
                       "    const int64_t c1 = c0 + (end - i) < {1} ? c0 + (end - i) : {1};\n"
                       "#pragma omp simd\n"
                       "    for (int64_t c = c0; c < c1; ++c) {2}<{3}>(p, r, c);\n"
                       "    i += c1 - c0;\n"
                       "  }\n}\n",
                       sym, b.cols, body, T)
             .str();
    return s;
  }
  // A tile: rows [r0, r1) of columns [cb, ce), every point computed and stored,
  // each column's values summed in row order. With `part` null the sums are the
  // results (the tile holds every row); otherwise they are row chunk `chunk`'s
  // partial sums, part[(chunk * NR + j) * COLS + c], and NAME_combine adds the
  // chunks in chunk order. The runtime picks the chunks from the shape alone
  // (runtime/cpu/kernels/column_sum.h), so the order of the additions does not
  // depend on the thread count; threads take row chunks, the layout their
  // producers wrote the rows in.
  size_t nr = b.reduceArgs.size();
  s += llvm::formatv("LMC_CPU_ENTRY void {0}(void *const *p, int64_t r0, int64_t r1, int64_t cb, int64_t ce,\n"
                     "                        void *part, int64_t chunk) {{\n"
                     "  typedef lmc::acc_t<{1}> A;\n"
                     "  for (int64_t c0 = cb; c0 < ce; c0 += {2}) {{\n"
                     "    const int64_t c1 = c0 + {2} < ce ? c0 + {2} : ce;\n"
                     "    A acc[{3}][{2}];\n"
                     "    for (int64_t j = 0; j < {3}; ++j)\n"
                     "      for (int64_t c = 0; c < c1 - c0; ++c) acc[j][c] = 0;\n"
                     "    for (int64_t r = r0; r < r1; ++r) {{\n"
                     "#pragma omp simd\n"
                     "      for (int64_t c = c0; c < c1; ++c) {5}<{1}>(p, r, c, &acc[0][c - c0], {2});\n"
                     "    }\n"
                     "    if (part) {{\n"
                     "      for (int64_t j = 0; j < {3}; ++j)\n"
                     "        for (int64_t c = c0; c < c1; ++c) ((A *)part)[(chunk * {3} + j) * {4} + c] = acc[j][c - c0];\n"
                     "      continue;\n"
                     "    }\n",
                     sym, T, kColumnChunk, nr, b.cols, body)
           .str();
  for (size_t j = 0; j < nr; ++j)
    s += llvm::formatv("    for (int64_t c = c0; c < c1; ++c) (({0} *)p[{1}])[c] = lmc::store<{0}>(acc[{2}][c - c0]);\n",
                       T, b.reduceArgs[j], j)
             .str();
  s += "  }\n}\n";
  s += llvm::formatv("LMC_CPU_ENTRY void {0}_combine(void *const *p, int64_t cb, int64_t ce, const void *part,\n"
                     "                                int64_t chunks) {{\n"
                     "  typedef lmc::acc_t<{1}> A;\n"
                     "  const A *q = (const A *)part;\n",
                     sym, T)
           .str();
  for (size_t j = 0; j < nr; ++j)
    s += llvm::formatv("#pragma omp simd\n"
                       "  for (int64_t c = cb; c < ce; ++c) {{\n"
                       "    A t = q[{2} * {4} + c];\n"
                       "    for (int64_t k = 1; k < chunks; ++k) t += q[(k * {3} + {2}) * {4} + c];\n"
                       "    (({0} *)p[{1}])[c] = lmc::store<{0}>(t);\n"
                       "  }\n",
                       T, b.reduceArgs[j], j, nr, b.cols)
             .str();
  return s + "}\n";
}

std::string cudaEntry(const KernelInstance &k, StringRef dtype, StringRef body) {
  const KernelBody &b = *k.body;
  std::string sym = k.name + "_" + dtype.str(), T = storageType(dtype);
  size_t nargs = b.args.size();
  if (b.schedule != KernelSchedule::ColumnReduce)
    return llvm::formatv("extern \"C\" __global__ void {0}(lmc::Args<{1}> a, int64_t begin, int64_t end) {{\n"
                         "  for (int64_t i = begin + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < end;\n"
                         "       i += (int64_t)gridDim.x * blockDim.x) {{\n"
                         "    const int64_t r = i / {2};\n"
                         "    {3}<{4}>(a.p, r, i - r * {2});\n"
                         "  }\n}\n",
                         sym, nargs, b.cols, body, T)
        .str();
  // Two passes, so that thousands of rows by a few hundred columns (a bias
  // gradient) fill the GPU: NAME sums each chunk of rows of 32 columns in a block
  // of 32 x 8 threads (a thread every 8th row, then the 8 lanes in order) into
  // part[chunk][j][c]; NAME_combine adds the chunks in order. The order is fixed
  // by the shape alone (runtime/cuda/generated.cpp picks the chunks), so a run
  // repeats bit for bit on any GPU.
  size_t nr = b.reduceArgs.size();
  std::string s = llvm::formatv(
                      "extern \"C\" __global__ void {0}(lmc::Args<{1}> a, int64_t begin, int64_t end, void *partv,\n"
                      "                                   int64_t chunkRows) {{\n"
                      "  typedef lmc::acc_t<{2}> A;\n"
                      "  __shared__ A lanes[{3}][8][33];\n"
                      "  A *part = (A *)partv;\n"
                      "  const int64_t c = begin + blockIdx.x * 32 + threadIdx.x;\n"
                      "  const int64_t r0 = blockIdx.y * chunkRows;\n"
                      "  const int64_t r1 = r0 + chunkRows < {4} ? r0 + chunkRows : {4};\n"
                      "  A acc[{3}] = {{};\n"
                      "  if (c < end)\n"
                      "    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {5}<{2}>(a.p, r, c, acc, 1);\n"
                      "  for (int j = 0; j < {3}; ++j) lanes[j][threadIdx.y][threadIdx.x] = acc[j];\n"
                      "  __syncthreads();\n"
                      "  if (threadIdx.y == 0 && c < end)\n"
                      "    for (int j = 0; j < {3}; ++j) {{\n"
                      "      A t = lanes[j][0][threadIdx.x];\n"
                      "      for (int y = 1; y < 8; ++y) t += lanes[j][y][threadIdx.x];\n"
                      "      part[(blockIdx.y * (int64_t){3} + j) * end + c] = t;\n"
                      "    }\n"
                      "}\n",
                      sym, nargs, T, nr, b.rows, body)
                      .str();
  s += llvm::formatv("extern \"C\" __global__ void {0}_combine(lmc::Args<{1}> a, int64_t end, const void *partv,\n"
                     "                                           int64_t chunks) {{\n"
                     "  typedef lmc::acc_t<{2}> A;\n"
                     "  const A *part = (const A *)partv;\n"
                     "  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < end;\n"
                     "       c += (int64_t)gridDim.x * blockDim.x) {{\n",
                     sym, nargs, T)
           .str();
  for (size_t j = 0; j < nr; ++j)
    s += llvm::formatv("    {{\n      A t = part[{2} * end + c];\n"
                       "      for (int64_t k = 1; k < chunks; ++k) t += part[(k * {3} + {2}) * end + c];\n"
                       "      (({0} *)a.p[{1}])[c] = lmc::store<{0}>(t);\n    }\n",
                       T, b.reduceArgs[j], j, nr)
             .str();
  return s + "  }\n}\n";
}

} // namespace

std::string mlir::lm::writeKernelSource(const std::vector<KernelInstance> &kernels, bool cuda) {
  std::string src;
  src += "// Generated by lmc: the fused kernels of one plan (docs/fusion.md).\n";
  src += cuda ? "// CUDA: compiled by nvcc into the plan's module image.\n"
              : "// CPU: compiled by the host C++ compiler into the plan's shared object.\n";
  src += kPrelude;
  if (cuda)
    src += "\nnamespace lmc {\ntemplate <int N> struct Args { void *p[N]; };\n}  // namespace lmc\n";
  llvm::StringSet<> bodies, entries;
  for (const KernelInstance &k : kernels) {
    std::string body = bodyName(*k.body);
    if (bodies.insert(body).second) {
      std::string text = k.body->text;
      text.replace(text.find("LMC_BODY"), 8, body);
      src += "\n" + text;
    }
    std::string sym = entrySymbol(k);
    if (!entries.insert(sym).second)
      continue;
    src += cuda ? cudaEntry(k, k.dtype, body) : cpuEntry(k, k.dtype, body);
  }
  src += "\n#ifdef LMC_ALL_STORAGE_TYPES\n// Reduced-precision storage, f32 accumulation.\n";
  llvm::StringSet<> extra;
  for (const KernelInstance &k : kernels)
    for (StringRef dtype : {"bf16", "f16"})
      if (k.dtype == "f32" && extra.insert(k.name + "_" + dtype.str()).second)
        src += cuda ? cudaEntry(k, dtype, bodyName(*k.body)) : cpuEntry(k, dtype, bodyName(*k.body));
  src += "#endif\n";
  return src;
}

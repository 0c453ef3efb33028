/* Implements: the plan contract, the one statement of what a valid plan is
   (docs/plan-format.md), shared by the writer and the reader: lmc checks every
   plan it writes against it, lmrt every plan it loads. Plain C++ over the plan
   protobuf (no BLAS, no MLIR): plan types and their sizes, the train and data
   configs, parameter initialisers, buffers, dataflow, program conventions, and
   each step against the op table generated from the ODS (op_table.h). What only
   the kernels know, a step's types against its kernel's check(), is passed in. */
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "contract/plan.pb.h"
#include "contract/train_settings.h"

namespace lmrt {

/* Byte alignment of every ARENA buffer offset (and of the arena itself). */
constexpr int64_t kArenaAlignment = 64;
/* Largest arena a plan may ask for (1 PiB): far beyond any machine, small enough
   that offset and size arithmetic on it cannot overflow. */
constexpr int64_t kMaxArenaBytes = int64_t(1) << 50;

// --- plan tensor types ---------------------------------------------------------

/* Bytes per element: f64 8, f32 and i32 4. */
int64_t dtypeBytes(plan::DType dtype);  // 8, 4 or 2 (bf16, f16)
/* "f32", "f64", "i32", "bf16", "f16"; "invalid" for any other value. */
const char *planDTypeName(plan::DType dtype);
/* Elements and bytes of a tensor of `t` (one that passed checkPlanType: no overflow). */
int64_t numElements(const plan::TensorType &t);
int64_t typeBytes(const plan::TensorType &t);
/* "" when `t` has a known dtype, no negative dim and at most 2^50 bytes at 8
   bytes an element, else what is wrong. */
std::string checkPlanType(const plan::TensorType &t);
/* "f32[2, 3]", with "invalid[...]" for a type that fails checkPlanType. */
std::string planTypeStr(const plan::TensorType &t);
const char *bufferKindName(plan::Buffer::Kind k);

/* What lmrt holds to train a plan, the sum lmc writes as predicted_peak_bytes:
   parameter values, gradients and AdamW's m and v (4 x the parameters), one batch of
   the train step's inputs, the largest program arena (programs share one), and the
   largest matmul scratch (contract/matmul_dims.h: thread-local, reused, so
   the largest counts once), and the largest chunk scratch of a fused linear
   cross-entropy (contract/linear_cross_entropy.h; kept the same way). The plan's
   programs must have valid buffer ids. Under ZeRO stage 1 (TrainConfig.mesh.zero)
   the optimizer state is rank 0's shards (zeroShard), the largest of any rank's.
   On a mesh, the collectives' buffers beside the arena (commScratch: see
   communicationScratch in contract.cpp). */
struct PredictedMemory {
  int64_t params = 0, grads = 0, optimizer = 0, inputs = 0, arena = 0, matmulScratch = 0, lossScratch = 0,
          commScratch = 0;
  int64_t total() const {
    return params + grads + optimizer + inputs + arena + matmulScratch + lossScratch + commScratch;
  }
};
PredictedMemory predictedMemory(const plan::Plan &plan);

/* Whether step `next` of `program` joins the all-reduce bucket that step `first` starts
   (or belongs to): both all_reduce of one input and one output, of one dtype, mesh
   axis, group size and reduction. The CPU backend runs a run of adjacent such steps as
   one all-reduce, and communicationScratch counts it as one (docs/distributed.md,
   "Buckets and overlap"). */
bool joinsAllReduceBucket(const plan::Program &program, const plan::Step &first, const plan::Step &next);

/* The same for a reduce-scatter bucket (ZeRO-2's and -3's gradients): both reduce_scatter
   of one input and one output along dimension 0 (rank-major, as -lm-zero-shard-params'
   flat gradients are), of one dtype, mesh axis and group size. */
bool joinsReduceScatterBucket(const plan::Program &program, const plan::Step &first, const plan::Step &next);

/* The steps of `program`, the train step, that make a parameter's reduced-precision
   copy, in step order: a `cast` of a PARAM buffer to bf16 or f16 into an arena buffer
   (-lm-mixed-precision places one per parameter a GEMM reads) that no all_gather reads
   (a ZeRO-3 slice cast for its gather is that gather's temporary). lmc plans such a
   buffer over the whole program, sharing its bytes with no other buffer of the program,
   so the copy outlives a run; the CPU backend then skips the cast while the copy is
   current, AdamW writing it in its own pass (docs/mixed-precision.md, "Speed and
   memory"). Other programs: none. */
std::vector<int> paramCopies(const plan::Program &program);

/* The steps of `program` that make a parameter copy (paramCopies) whose output
   buffer's bytes meet no other arena buffer of the program (views of it aside), in
   step order: the copies that survive from one run of the program to the next. A plan
   made before lmc kept them whole yields none, and its casts run every step. */
std::vector<int> keptParamCopies(const plan::Program &program);

/* ZeRO's split of a parameter of `numel` elements over `ranks` data-parallel ranks
   (docs/distributed.md, "ZeRO"): rank r keeps and updates elements [begin, end),
   consecutive slices of ceil(numel / ranks) elements in rank order (the last ones
   shorter or empty). The runtime's shards and the memory prediction both follow it. */
struct ShardRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
inline ShardRange zeroShard(int64_t numel, int64_t ranks, int64_t rank) {
  const int64_t chunk = (numel + ranks - 1) / ranks;
  const int64_t begin = std::min(numel, rank * chunk);
  return {begin, std::min(numel, begin + chunk)};
}

namespace contract {

/* A configuration value outside its bounds, as "<field> = <value> <rule>":
   `field` is the plan's field name ("lr", "warmup_steps"), `value` as %g or a
   quoted string, `rule` what it must be ("must be finite and >= 0"). lmrt
   prefixes "train config: ", lmc names the module attribute it came from. */
struct Violation {
  std::string field, value, rule;
  std::string str() const { return field + " = " + value + " " + rule; }
};

std::optional<Violation> checkTrainConfig(const plan::TrainConfig &train);

/* A train setting's value in the plan, by its field (contract/train_settings.h):
   in TrainConfig, its Optimizer or its Schedule; a bool reads as 0 or 1. The
   table names the fields and this binds them, so no side lists them again. */
double trainSettingValue(const plan::TrainConfig &train, const settings::Setting &s);
void setTrainSetting(plan::TrainConfig &train, const settings::Setting &s, double value);
/* True when the plan carries a data config (all fields empty: it has none, as
   an op-level gradient check does; `lmrt run` refuses such a plan itself). */
bool hasDataConfig(const plan::DataConfig &data);
std::optional<Violation> checkDataConfig(const plan::DataConfig &data);

/* "" when the causal data pipeline of `data` feeds program `program` a token
   input of type `t`, else the type it feeds: "i32[2, 5]" (train_step and eval:
   seq + 1 ids a row) or "i32[2, T <= 4]" (forward). */
std::string expectedTokenInput(const std::string &program, const plan::TensorType &t,
                               const plan::DataConfig &data);
/* A forward program: "forward" (a plan with one model) or "forward:<model>"
   (one of several; docs/plan-format.md). */
bool isForwardProgram(const std::string &program);
/* A transform parameter's value: the plan's, else the transform's default. */
double transformParam(const plan::DataConfig &data, const std::string &name);
/* "" when a non-causal transform of `data` produces input `in` (its name, type
   and bounds), else what it would feed (or the names it produces). */
std::string expectedTransformInput(const plan::Input &in, const plan::DataConfig &data);
/* Dropout's random keys: the input a program that uses dropout reads besides
   its data, i32[rows, 2] (two words a row), which every data pipeline fills
   from (seed, step, sample) (docs/runtime.md, "Dropout keys"). */
inline constexpr const char *kDropoutKeyInput = "dropout_key";
bool isDropoutKey(const plan::Input &in);
/* "" when `in` (a dropout key) is i32[rows, 2], else the type expected. */
std::string expectedDropoutKey(const plan::Input &in, int64_t rows);
/* fp16's loss scale (docs/mixed-precision.md, "fp16"): the f32 scalar that
   seeds train_step's backward, which lmrt feeds from its loss scaler. Only a
   train_step of a precision "fp16" plan reads it, and such a one must. */
inline constexpr const char *kLossScaleInput = "loss_scale";
bool isLossScale(const plan::Input &in);
/* "" when a non-causal transform's pipeline feeds train_step or eval input `in`:
   a transform output (expectedTransformInput), the dropout key
   (expectedDropoutKey) or the loss scale (lmrt's loss scaler; its own checks
   are the plan's); else what it would feed. */
std::string expectedPipelineInput(const plan::Input &in, const plan::DataConfig &data);
/* The program's data inputs: all but the dropout key and the loss scale. */
std::vector<const plan::Input *> dataInputs(const plan::Program &program);
/* False when the input's vocab bound (if any) is below the data's vocabulary:
   the pipeline would feed it ids it rejects. */
bool tokenVocabFits(const plan::Input &in, const plan::DataConfig &data);

/* A parameter initialiser outside its bounds: a `kind` ("normal") initialiser
   with `values` ("mean 0 and std -1"); `rule` ("both must be finite and std >= 0"). */
struct InitViolation {
  std::string kind, values, rule;
};
std::optional<InitViolation> checkInit(const plan::Init &init);
/* "" unless `init` is blocks(...) whose parts do not divide `type`'s last
   dimension (a scalar has none): then what is wrong. */
std::string checkBlocksShape(const plan::Init &init, const plan::TensorType &type);

/* A step's types and attributes against its kernel: "" when they pass, else the
   kernel's message. lmrt passes its kernels' check(); lmc none, since the
   dialect's verifiers have applied the same shape rules to every op. */
using StepCheck = std::function<std::string(const plan::Step &step, const std::vector<plan::TensorType> &in,
                                            const std::vector<plan::TensorType> &out)>;

/* "" when `plan` keeps the contract, else the first problem, naming where it is:
   "program 'train_step', step 17 (matmul, from gpt_tiny.lm:12:5): ...". */
std::string checkPlan(const plan::Plan &plan, const StepCheck &stepCheck = nullptr);

}  // namespace contract
}  // namespace lmrt

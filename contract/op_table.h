/* Implements: the table of ops a plan step may run, generated from the lm
   dialect's ODS (dialect/IR/LMOps.td) by tools/lm-tblgen, plus the runtime-only
   "copy". Plain C++ with no dependency: lmc (no BLAS) checks the steps it
   writes against it, lmrt (no MLIR) the steps it loads, and the kernel registry
   proves it has one kernel per entry, so the list of ops is stated once. */
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lmrt::ops {

/* The plan form of an op attribute (plan.proto's Attr: i, f, b, ints). */
enum class AttrKind { Int, Float, Bool, IntList };

/* "an integer", "a float", "a bool", "an integer list" (for messages). */
const char *attrKindName(AttrKind kind);

struct AttrInfo {
  const char *name;  // as in the ODS and the plan ("transpose_rhs")
  AttrKind kind;
  /* A step may omit an attribute that has a default; the value of the matching kind applies. */
  bool hasDefault;
  int64_t defaultInt;
  double defaultFloat;
  bool defaultBool;
};

struct OpInfo {
  const char *name;  // the op name without "lm." ("matmul"), = Step.op
  int numInputs;
  int numOutputs;
  const AttrInfo *attrs;  // numAttrs entries (nullptr when none)
  int numAttrs;
  /* The op updates a STATE buffer in place (LM_UpdatesStateInPlace in the ODS):
     its output 0 may be the STATE buffer it reads as input 0 (docs/plan-format.md). */
  bool updatesState = false;
  /* The kernel may be given input 0's buffer as output 0 (LM_MayOverwriteOperand0 in
     the ODS): lmc does that when nothing else reads input 0 (docs/plan-format.md). */
  bool overwritesInput0 = false;

  /* nullptr when the op has no attribute of that name. */
  const AttrInfo *findAttr(std::string_view attr) const;
};

/* The runtime's buffer-to-buffer copy: not an lm op, emitted by the plan writer
   for a gradient that aliases another value (docs/compilation.md). */
inline constexpr const char *kCopyOpName = "copy";

/* The step that runs a kernel lmc generated from a fused region,
   Plan.kernels[attr "kernel"], on its inputs then outputs (docs/fusion.md). Its
   arity and types come from that kernel, not from this table. */
inline constexpr const char *kFusedOpName = "fused";

/* A backend's kernel table as the op table sees it: one entry per kernel, with its
   operand and result counts where the backend states them (-1: not stated). */
struct KernelEntry {
  const char *op;
  int numInputs = -1, numOutputs = -1;
};

/* "" when `kernels` has exactly one kernel for every op of the table, with the op's
   operand and result counts where stated, and none for anything else; else every
   disagreement, one per line ("op 'gelu' has no CUDA kernel"). `kind` names the
   table in the messages: "" (the CPU's) or "CUDA". Every backend's unit tests run it. */
std::string compareKernelTable(const std::vector<KernelEntry> &kernels, const std::string &kind = "");

/* Every op a plan step may name: the generated lm ops, then "copy". */
const std::vector<OpInfo> &allOps();
/* nullptr when no op has that name. */
const OpInfo *findOp(std::string_view name);

}  // namespace lmrt::ops

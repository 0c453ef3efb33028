//===- MemoryPlanner.h - Liveness and arena offsets of a program -*- C++ -*-===//
//
// The static memory plan of one plan program. Liveness is computed from the
// program's steps (a buffer lives from the step that writes it to the last step
// that reads it; program outputs live to the end), so the same code plans a
// program the writer is building and re-checks any finished plan file. Offsets
// are assigned greedy-by-size, first-fit, 64-byte aligned: the largest buffers
// are placed first, each at the lowest offset that does not overlap a buffer
// whose live range intersects its own. A step's outputs are live at the step
// that reads its inputs, so they never share memory with those inputs. A view
// (a reshape of an arena value) gets the offset of the buffer it views, whose
// live range extends over every read of the view.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/raw_ostream.h"
#include "contract/plan.pb.h"
#include "contract/contract.h"
#include <cstdint>
#include <string>
#include <vector>

namespace mlir::lm {

/// Arena offsets and sizes are multiples of this: the runtime's alignment
/// (validate.h is header-only here; lmc does not link the validator).
using lmrt::kArenaAlignment;

/// The inclusive step range [first, last] in which an arena buffer holds a
/// live value. `first < 0` marks a buffer no step writes.
struct LiveRange {
  int64_t first = -1;
  int64_t last = -1;
  bool overlaps(const LiveRange &other) const { return first <= other.last && other.first <= last; }
};

/// Live ranges of every buffer of `program`, indexed by buffer id (meaningful for
/// ARENA buffers only). Program outputs live until the last step.
std::vector<LiveRange> computeLiveRanges(const lmrt::plan::Program &program);

/// computeLiveRanges, and the inputs of a collective step (all_reduce,
/// reduce_scatter, all_gather) kept live until the step before the first one that
/// reads its outputs (the end, for a program output no step reads): lmrt keeps a
/// collective in flight, overlapped with the next steps, from its step until that read
/// (docs/distributed.md, "Buckets and overlap"), so no step in between may take
/// its input's bytes. Also a parameter's reduced-precision copy (lmrt::paramCopies)
/// kept live over the whole program, so that it outlives the run. What
/// assignArenaOffsets plans with; a plan planned without
/// it stays sound (lmrt also waits for a collective before a step that would
/// write the bytes it works on), so verifyMemoryPlan checks the plain ranges.
std::vector<LiveRange> computePlanningRanges(const lmrt::plan::Program &program);

/// Assigns `offset` to every ARENA buffer of `program` (greedy by size, first fit)
/// and sets `arena_bytes`. Buffer sizes must already be set, and every ARENA
/// buffer must be the output of some step (the plan writer makes one per result).
void assignArenaOffsets(lmrt::plan::Program &program);

/// Re-checks a finished program's memory plan: every arena buffer is aligned,
/// inside the arena, written before it is read, and no two buffers that are live
/// at the same step overlap. Returns "" when the plan is sound, else a message
/// naming the first offending buffers.
std::string verifyMemoryPlan(const lmrt::plan::Program &program);

/// Prints each arena buffer's half-open step range [start, end), offset and size,
/// followed by the verdict of verifyMemoryPlan. Returns that verdict.
std::string printMemoryPlan(const lmrt::plan::Program &program, llvm::raw_ostream &os);

} // namespace mlir::lm

//===- MemoryBudget.h - Budgets on the predicted peak memory ----*- C++ -*-===//
//
// A memory budget bounds a plan's predicted peak (the sum lmc prints:
// parameters, gradients, AdamW state, inputs, the arena). compileToPlan checks
// every plan compiled with a budget against it (a compile error, with the
// largest live tensors at the peak and the remat policy that would fit), and
// turns the budget into -lm-remat's activation budget for `remat = auto`.
// See docs/remat.md, "Budgets".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "contract/plan.pb.h"

#include <cstdint>
#include <string>

namespace mlir::lm {

/// "39.3 MiB (41,191,536 bytes)".
std::string describeBytes(int64_t bytes);
/// `n` with a comma every three digits ("834,304").
std::string groupThousands(int64_t n);

/// The lines that say what makes up the peak of `plan`: the program with the
/// largest arena, the step where its live arena buffers sum highest, and the
/// `count` largest buffers live there (bytes, type, the op that writes it and
/// its source location).
std::string describePeak(const lmrt::plan::Plan &plan, int count = 5);

} // namespace mlir::lm

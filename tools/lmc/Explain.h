//===- Explain.h - `lmc explain`: what makes up a plan's memory and FLOPs -*- C++ -*-===//
//
// `lmc explain X.lm` compiles like `lmc compile` and, instead of writing the
// plan, says where its predicted peak memory and its FLOPs go (docs/explain.md):
// the terms of contract/contract.h's predictedMemory, every tensor live at the
// train step's peak (why it is live: saved for the backward, recomputed by
// remat, or a temporary), and the FLOPs per op family. Read only from the
// finished plan, so what it explains is exactly what lmrt would run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "contract/plan.pb.h"

#include <string>

namespace lmc {

struct ExplainOptions {
  std::string format = "text"; // text | json
  std::string chart;           // an SVG file of the train step's live memory, or ""
  std::string remat, fusion;   // as asked for, for the header
  std::string machine;         // the machine file of the cost model's rates, or "" (contract/cost_model.h)
};

/// Prints the explanation of `plan` (compiled from `source`) to stdout and
/// writes the chart if asked for. Returns the exit status (errors printed).
int explainPlan(const lmrt::plan::Plan &plan, const std::string &source, const ExplainOptions &options);

} // namespace lmc

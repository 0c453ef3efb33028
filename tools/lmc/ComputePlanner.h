//===- ComputePlanner.h - lmc plan: compute-optimal sizes -------*- C++ -*-===//
//
// `lmc plan --flops C | --params N | --tokens D` (docs/compilation.md, "lmc
// plan"): the Chinchilla compute-optimal model and data size for a budget
// (Hoffmann et al. 2022: C = 6·N·D with about 20 tokens a parameter, so
// N* = sqrt(C / 120), D* = 20·N*), Kaplan et al.'s (2020) loss prediction
// L(N) = (N_c / N)^α_N, and the zoo preset whose parameter count (from the
// frontend, the parameters `lmc compile` counts) is nearest N*. The seeds
// state both laws (seed 001 §5.2).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmc {

/// Chinchilla's rule of thumb: tokens per parameter at the compute optimum.
constexpr double kChinchillaTokensPerParam = 20.0;
/// Training FLOPs per parameter per token: 2 forward, 4 backward (C = 6ND).
constexpr double kFlopsPerParamToken = 6.0;
/// Kaplan et al. 2020, eq. 1.1: N_c (non-embedding parameters) and α_N.
constexpr double kKaplanNc = 8.8e13, kKaplanAlphaN = 0.076;

struct ComputeBudget {
  double flops = 0, params = 0, tokens = 0;
};

/// The compute-optimal (N*, D*, C) from any one of them.
ComputeBudget chinchillaFromFlops(double flops);
ComputeBudget chinchillaFromParams(double params);
ComputeBudget chinchillaFromTokens(double tokens);

/// Kaplan's L(N) in nats per token, N the non-embedding parameters.
double kaplanLoss(double params);

/// A positive finite number as written on the command line: "1e21", "6e20",
/// "124000000"; false with `error` otherwise.
bool parseScale(const std::string &flag, const std::string &text, double &value, std::string &error);

struct PlanOptions {
  std::string flops, params, tokens;  // exactly one given
  std::string zoo = "models";         // the folder of the zoo's .lm files
};

/// Runs `lmc plan`; returns the exit status (errors printed as "lmc: error: ...").
int runPlan(const PlanOptions &options);

/// "6ND compute of S steps" for `lmc compile --steps S`: N the model's
/// (logical) parameters, D = global batch × seq × S tokens; also the plan's own
/// FLOP model, one rank's flopsPerStep summed over `ranks` ranks.
std::string describeRunCompute(int64_t params, int64_t batch, int64_t seq, int64_t steps, int64_t flopsPerStep,
                               int64_t ranks = 1);

} // namespace lmc

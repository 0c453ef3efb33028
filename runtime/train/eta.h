/* Implements: the ETA and throughput fields of `lmrt run`'s progress line:
   "... | 25249 tok/s | 137.2 GFLOP/s | ETA 1m05s". The ETA is the mean wall
   time per step so far (evaluations included) times the steps left; GFLOP/s is
   the plan's predicted FLOPs per step over the step's wall time. */
#pragma once
#include <cstdint>
#include <string>

namespace lmrt {

/* "45s", "3m05s", "1h02m", "2d03h" (rounded down; negative or NaN: "?"). */
std::string formatDuration(double seconds);

/* " | 137.2 GFLOP/s" (empty when the plan predicts no FLOPs) followed by
   " | ETA 1m05s" (empty after the last step). */
std::string progressTail(int64_t planFlopsPerStep, double stepSeconds, double elapsedSeconds,
                         int64_t stepsDone, int64_t stepsTotal);

}  // namespace lmrt

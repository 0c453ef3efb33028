/* Implements: the step-time cost model (docs/explain.md, "Predicted step time").
   A train step's time is predicted from the plan alone: each step's kernel from
   its predicted FLOPs and bytes (Step.flops, Step.bytes: the dialect's
   CostOpInterface, the one place an op's cost is stated) against the machine's
   rates, plus the optimizer's pass over the parameters. The rates are measured
   once per machine by `lmrt calibrate` (tools/lmrt/cmd_calibrate.cpp) and stored
   as a small JSON file that `lmc explain` reads; without one, stated defaults.
   Read by both halves (lmc explains, lmrt measures), so it lives in the
   contract: no MLIR, no BLAS. */
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "contract/plan.pb.h"

namespace lmrt {

/* The op family a step's FLOPs and time count under (lmc explain's table):
   GEMMs with their fused epilogues, the attention kernels, norms, elementwise
   ops and fused elementwise kernels, the losses (the fused linear
   cross-entropy's GEMM included: it is one kernel), everything else
   (embeddings, slices, reductions, softmax, ...). */
enum class OpFamily { Matmul, Attention, Norm, Elementwise, Loss, Other };
constexpr int kNumOpFamilies = 6;
const char *opFamilyName(OpFamily f);
OpFamily opFamily(const plan::Plan &plan, const plan::Step &step);

/* How the model times a kernel: at the GEMM rate (a GEMM, a fused GEMM
   epilogue, the fused linear cross-entropy), at a fraction of it (attention:
   its products are many small per-head tiles with a softmax between them), or
   by its bytes at the memory bandwidth (everything else). */
enum class KernelClass { Gemm, Attention, Memory };
KernelClass kernelClass(const plan::Plan &plan, const plan::Step &step);

/* A measured rate at one kernel size: `size` the FLOPs (GEMM) or bytes
   (memory) of one call, `rate` GFLOP/s or GB/s. A curve is sorted by size; the
   rate between points is interpolated on log(size), and held flat beyond the
   ends (small kernels run below the peak: less reuse, more packing per FLOP). */
struct RatePoint {
  double size = 0, rate = 0;
};
double rateAt(const std::vector<RatePoint> &curve, double size);

struct MachineRates {
  std::vector<RatePoint> gemm;    // GFLOP/s by FLOPs per call (lmrt's matmul kernel)
  std::vector<RatePoint> memory;  // GB/s by bytes per call (lmrt's layer_norm kernel)
  double kernelOverheadUs = 0;    // one tiny kernel call (OpenMP fork/join, dispatch)
  /* GB/s of a plain streaming kernel far beyond the caches (lmrt's add on
     16 Mi values): what the optimizer's pass over the parameters and a GEMM's
     operands moving through memory run at, unlike the memory curve's
     norms and reductions. 0: not measured (files before it), then the memory
     curve's best rate stands in (streamBandwidth). */
  double streamGbps = 0;
  /* Attention kernels' FLOP rate as a fraction of the GEMM rate at the same
     FLOPs: fitted once against --profile on the zoo (docs/explain.md), not
     measured by calibrate (it would need attention's FLOP formula, which lives
     in the dialect). */
  double attentionFraction = 0.21;
  /* No flat in-step GEMM factor any more: a GEMM inside a train step is priced
     as its FLOPs at the isolated rate plus its operands' and result's bytes at
     the streaming bandwidth (predictKernelSeconds), since calibrate's repeated calls
     find their operands in cache and a step's GEMM does not. That in-step
     slowdown follows from the shape: a large square GEMM (GPT-2 small's
     256 x 768 x 3072, 0.94 of the isolated rate) hardly notices it, a skinny
     tiny-preset one (0.85-0.9) does. Machine files written before carry a
     "gemm_fraction" key, which is read and ignored. */
  int threads = 0;              // the thread count the rates were measured with
  std::string device = "cpu";   // the backend measured
  std::string origin;           // the file read, or "" for the defaults
};

/* Rates for a machine never measured: a small two-core x86 server's, rounded
   (gemm 100 GFLOP/s at 1 GFLOP a call, memory 20 GB/s). lmc explain says when
   it uses them. */
MachineRates defaultMachineRates();
double streamBandwidth(const MachineRates &rates);  // GB/s

/* Where calibrate writes and explain looks: $LMC_MACHINE_FILE, else
   $XDG_CACHE_HOME/lmc/machine.json, else ~/.cache/lmc/machine.json. */
std::string defaultMachineFile();

/* The file's JSON ({"lmc_machine": 1, ...}; docs/explain.md); parse throws
   lmrt::Error saying what is wrong. */
std::string machineRatesJson(const MachineRates &rates);
MachineRates parseMachineRates(const std::string &json, const std::string &origin);

/* The predicted time of one train step (program 0) with its optimizer update. */
struct StepTimePrediction {
  double kernels = 0;                    // the train step's kernels
  double optimizer = 0;                  // gradient norm, clipping and AdamW: one pass over the parameters
  double family[kNumOpFamilies] = {};    // kernels by op family
  double total() const { return kernels + optimizer; }
};
double predictKernelSeconds(const plan::Plan &plan, const plan::Step &step, const MachineRates &rates);
StepTimePrediction predictStepTime(const plan::Plan &plan, const MachineRates &rates);

}  // namespace lmrt

//===- CostModelTest.cpp - The step-time cost model's arithmetic -------===//
//
// Tests contract/cost_model.h on hand-built plans (no timing is measured or
// asserted): rates interpolate on log(size) and hold flat past the ends, each
// kernel class is priced by its FLOPs or bytes (a GEMM by both: its FLOPs at
// the isolated rate plus its operands streamed at the memory rate, so the
// in-step slowdown follows from its shape), the optimizer pass is 8 passes
// over the parameters, and the machine file round-trips and rejects bad
// files with a message.
//
//===----------------------------------------------------------------------===//
#include "base/tensor.h"
#include "contract/cost_model.h"

#include <gtest/gtest.h>

namespace {

using namespace lmrt;

TEST(CostModel, RatesInterpolateOnLogSizeAndHoldFlat) {
  std::vector<RatePoint> curve = {{1e3, 10}, {1e5, 30}};
  EXPECT_DOUBLE_EQ(rateAt(curve, 1e2), 10);
  EXPECT_DOUBLE_EQ(rateAt(curve, 1e6), 30);
  EXPECT_NEAR(rateAt(curve, 1e4), 20, 1e-9);
}

plan::Step *addStep(plan::Program &p, const char *op, int64_t flops, int64_t bytes) {
  plan::Step *s = p.add_steps();
  s->set_op(op);
  s->set_flops(flops);
  s->set_bytes(bytes);
  return s;
}

TEST(CostModel, KernelsArePricedByClass) {
  MachineRates r;
  r.gemm = {{1, 100}};       // GFLOP/s
  r.memory = {{1, 10}};      // GB/s
  r.kernelOverheadUs = 1;
  r.attentionFraction = 0.25;
  plan::Plan plan;
  plan::Program &p = *plan.add_programs();
  addStep(p, "matmul", 1'000'000'000, 100'000'000);   // 1 GFLOP at 100 GFLOP/s + 100 MB at 10 GB/s: 20 ms
  addStep(p, "attention_stats", 250'000'000, 0);      // at 25 GFLOP/s: 10 ms
  addStep(p, "layer_norm", 0, 10'000'000);            // 10 MB at 10 GB/s: 1 ms
  StepTimePrediction t = predictStepTime(plan, r);
  EXPECT_NEAR(t.family[int(OpFamily::Matmul)], 20e-3 + 1e-6, 1e-12);
  EXPECT_NEAR(t.family[int(OpFamily::Attention)], 10e-3 + 1e-6, 1e-12);
  EXPECT_NEAR(t.family[int(OpFamily::Norm)], 1e-3 + 1e-6, 1e-12);
  EXPECT_NEAR(t.kernels, 31e-3 + 3e-6, 1e-12);
  EXPECT_EQ(t.optimizer, 0);  // no parameters
  EXPECT_EQ(kernelClass(plan, p.steps(0)), KernelClass::Gemm);
  EXPECT_EQ(kernelClass(plan, p.steps(2)), KernelClass::Memory);
}

// The in-step GEMM slowdown is not a flat factor: with this machine's rates
// (runs/costmodel/machine.json, rounded), GPT-2 small's 256 x 768 x 3072
// forward GEMM keeps 0.9-1.0 of its isolated rate (its --profile: 0.93-1.0)
// while a tiny preset's skinny 512 x 64 x 64 one falls below 0.85.
TEST(CostModel, GemmSlowdownFollowsTheShape) {
  MachineRates r;
  r.gemm = {{65536, 43}, {524288, 125}, {4194304, 211}, {33554432, 218}, {268435456, 220}, {2147483648, 208}};
  r.memory = {{32768, 14}, {524288, 35}, {8388608, 35}, {134217728, 28}};
  r.streamGbps = 50;
  r.kernelOverheadUs = 0;
  auto fraction = [&](double m, double n, double k) {
    plan::Plan plan;
    plan::Program &p = *plan.add_programs();
    double flops = 2 * m * n * k, bytes = 4 * (m * k + k * n + m * n);
    addStep(p, "matmul", int64_t(flops), int64_t(bytes));
    return flops / (rateAt(r.gemm, flops) * 1e9) / predictKernelSeconds(plan, p.steps(0), r);
  };
  double large = fraction(256, 3072, 768), skinny = fraction(512, 64, 64);
  EXPECT_GT(large, 0.9);
  EXPECT_LT(large, 1.0);
  EXPECT_LT(skinny, 0.85);
}

// The update streams the parameters' bytes 8 times at the streaming
// bandwidth (not the layer norm's memory curve), plus two kernel calls.
TEST(CostModel, OptimizerStreamsTheParameters) {
  MachineRates r;
  r.gemm = {{1, 100}};
  r.memory = {{1, 10}};
  r.streamGbps = 40;
  r.kernelOverheadUs = 1;
  plan::Plan plan;
  plan.add_programs();
  plan::Param *w = plan.add_params();
  w->set_name("w");
  w->mutable_type()->set_dtype(plan::F32);
  w->mutable_type()->add_shape(1000);
  w->mutable_type()->add_shape(1000);  // 4 MB
  EXPECT_NEAR(predictStepTime(plan, r).optimizer, 8 * 4e6 / 40e9 + 2e-6, 1e-12);
}

TEST(CostModel, MachineFileRoundTrips) {
  MachineRates r = defaultMachineRates();
  r.threads = 3;
  r.attentionFraction = 0.5;
  r.streamGbps = 52.5;
  MachineRates back = parseMachineRates(machineRatesJson(r), "m.json");
  EXPECT_EQ(back.origin, "m.json");
  EXPECT_EQ(back.threads, 3);
  EXPECT_DOUBLE_EQ(back.attentionFraction, 0.5);
  EXPECT_DOUBLE_EQ(back.streamGbps, 52.5);
  ASSERT_EQ(back.gemm.size(), r.gemm.size());
  EXPECT_DOUBLE_EQ(back.gemm.back().rate, r.gemm.back().rate);
}

// Files written before the GEMMs' operand term carry "gemm_fraction": still
// read, the key ignored (the operand term replaces it; applying both would
// count the in-step slowdown twice).
TEST(CostModel, OldMachineFilesGemmFractionIsIgnored) {
  MachineRates r = parseMachineRates(
      R"({"lmc_machine": 1, "gemm_gflops": [[1, 100]], "memory_gbps": [[1, 10]], "gemm_fraction": 0.88,
          "kernel_overhead_us": 0})",
      "old.json");
  plan::Plan plan;
  plan::Program &p = *plan.add_programs();
  addStep(p, "matmul", 1'000'000'000, 0);
  EXPECT_NEAR(predictKernelSeconds(plan, p.steps(0), r), 10e-3, 1e-12);  // 1 GFLOP at 100 GFLOP/s
  // Nor does it carry "stream_gbps": the memory curve's best rate stands in.
  EXPECT_EQ(r.streamGbps, 0);
  EXPECT_DOUBLE_EQ(streamBandwidth(r), 10);
}

TEST(CostModel, BadMachineFilesSayWhy) {
  auto error = [](const std::string &text) {
    try {
      parseMachineRates(text, "m.json");
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("[]"), "machine file m.json: the file must hold one JSON object");
  EXPECT_EQ(error(R"({"lmc_machine": 1, "memory_gbps": [[1, 1]]})"),
            "machine file m.json: \"gemm_gflops\" must be a non-empty array of [size, rate] pairs");
  EXPECT_EQ(error(R"({"lmc_machine": 1, "gemm_gflops": [[1, 0]], "memory_gbps": [[1, 1]]})"),
            "machine file m.json: \"gemm_gflops\": sizes and rates must be > 0");
}

} // namespace

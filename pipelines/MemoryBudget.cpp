//===- MemoryBudget.cpp - Budgets on the predicted peak memory ------------===//

#include "pipelines/MemoryBudget.h"

#include "codegen/MemoryPlanner.h"
#include "contract/contract.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <vector>

using namespace mlir;

std::string mlir::lm::groupThousands(int64_t n) {
  std::string digits = std::to_string(n), grouped;
  const size_t sign = n < 0 ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0)
      grouped += ',';
    grouped += digits[i];
  }
  return grouped;
}

std::string mlir::lm::describeBytes(int64_t bytes) {
  const std::string grouped = groupThousands(bytes);
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4)
    value /= 1024, ++unit;
  std::string human = unit == 0 ? std::to_string(bytes) + " B" : llvm::formatv("{0:f1} {1}", value, units[unit]).str();
  return human + " (" + grouped + " bytes)";
}

std::string mlir::lm::describePeak(const lmrt::plan::Plan &plan, int count) {
  namespace pb = lmrt::plan;
  const pb::Program *largest = nullptr;
  for (const pb::Program &program : plan.programs())
    if (!largest || program.arena_bytes() > largest->arena_bytes())
      largest = &program;
  if (!largest || largest->steps_size() == 0)
    return "";
  const pb::Program &program = *largest;
  // The arena is first fit over these live ranges: its peak is where the live
  // buffers (views share their buffer's bytes) sum highest.
  std::vector<LiveRange> ranges = computeLiveRanges(program);
  auto counted = [&](int id) {
    const pb::Buffer &b = program.buffers(id);
    return b.kind() == pb::Buffer::ARENA && !b.has_view_of() && ranges[id].first >= 0;
  };
  std::vector<int64_t> live(program.steps_size() + 1, 0);
  for (int id = 0; id < program.buffers_size(); ++id)
    if (counted(id)) {
      live[ranges[id].first] += program.buffers(id).size_bytes();
      live[std::min<int64_t>(ranges[id].last + 1, program.steps_size())] -= program.buffers(id).size_bytes();
    }
  int64_t sum = 0, peak = -1;
  int peakStep = 0;
  for (int s = 0; s < program.steps_size(); ++s)
    if ((sum += live[s]) > peak)
      peak = sum, peakStep = s;
  std::vector<int> writer(program.buffers_size(), -1);
  for (int s = 0; s < program.steps_size(); ++s)
    for (int out : program.steps(s).outputs())
      if (writer[out] < 0)
        writer[out] = s;
  std::vector<int> atPeak;
  for (int id = 0; id < program.buffers_size(); ++id)
    if (counted(id) && ranges[id].first <= peakStep && peakStep <= ranges[id].last)
      atPeak.push_back(id);
  std::stable_sort(atPeak.begin(), atPeak.end(), [&](int a, int b) {
    return program.buffers(a).size_bytes() > program.buffers(b).size_bytes();
  });
  std::string out = llvm::formatv("the largest live tensors at the peak of {0} (step {1} of {2}: {3} of {4} live "
                                  "buffers, arena {5}):\n",
                                  program.name(), peakStep, program.steps_size(), describeBytes(peak), atPeak.size(),
                                  describeBytes(program.arena_bytes()))
                        .str();
  for (int i = 0; i < (int)atPeak.size() && i < count; ++i) {
    const pb::Buffer &b = program.buffers(atPeak[i]);
    const pb::Step *step = writer[atPeak[i]] >= 0 ? &program.steps(writer[atPeak[i]]) : nullptr;
    out += llvm::formatv("  {0}  {1}  {2}  {3}\n", describeBytes(b.size_bytes()), lmrt::planTypeStr(b.type()),
                         step ? step->op() : std::string("?"),
                         step && !step->loc().empty() ? step->loc() : std::string("(no source line)"))
               .str();
  }
  return out;
}

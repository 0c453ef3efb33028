/* Implements: sampling text from a plan's forward program (see generate.h). */
#include "runtime/train/generate.h"

#include <algorithm>
#include <cmath>

#include "runtime/data/counter_rng.h"
#include "runtime/lmrt/session.h"
#include "runtime/train/program_io.h"
#include "runtime/train/token_sampler.h"

namespace lmrt {

void generate(Session &s, const SampleOptions &o, const std::function<void(unsigned char)> &emit) {
  const plan::Input &in = tokenInput(findProgram(s, "forward"));
  int64_t vocab = in.vocab() > 0 ? in.vocab() : s.plan().data().vocab();
  std::vector<int32_t> context;
  for (size_t i = 0; i < o.prompt.size(); ++i) {
    unsigned char c = (unsigned char)o.prompt[i];
    if (vocab > 0 && c >= vocab)
      fail("prompt byte %u at offset %zu is outside the plan's vocabulary (%lld)", c, i,
           (long long)vocab);
    context.push_back(c);
  }
  if (context.empty()) context.push_back('\n');
  generateIds(s, o, std::move(context), 256, -1, [&](int32_t id) { emit((unsigned char)id); });
}

void generateIds(Session &s, const SampleOptions &o, std::vector<int32_t> context, int64_t idLimit,
                 int32_t stopId, const std::function<void(int32_t)> &emit) {
  if (o.tokens < 0) fail("--tokens must be >= 0 (got %lld)", (long long)o.tokens);
  if (o.temperature < 0 || !std::isfinite(o.temperature))
    fail("--temperature must be >= 0 (got %g)", o.temperature);
  if (o.topK < 0) fail("--top-k must be >= 0 (got %lld)", (long long)o.topK);
  const plan::Input &in = tokenInput(findProgram(s, "forward"));
  TensorType type = inputType(in);
  const int64_t B = type.shape[0], T = type.shape[1];
  int64_t vocab = in.vocab() > 0 ? in.vocab() : s.plan().data().vocab();
  if (context.empty()) fail("generation needs at least one context token");
  for (size_t i = 0; i < context.size(); ++i)
    if (context[i] < 0 || (vocab > 0 && context[i] >= vocab))
      fail("prompt token %d at position %zu is outside the plan's vocabulary (%lld)", context[i], i,
           (long long)vocab);

  std::vector<int32_t> batch(B * T, 0);
  std::vector<double> row;
  for (int64_t i = 0; i < o.tokens; ++i) {
    int64_t L = std::min<int64_t>((int64_t)context.size(), T);
    std::fill(batch.begin(), batch.end(), 0);
    std::copy(context.end() - L, context.end(), batch.begin());
    s.run("forward", {{in.name(), TensorRef{batch.data(), type}}});
    TensorRef logits = s.output("forward", "logits");
    const Shape &ls = logits.shape();
    if (ls.size() != 3 || ls[0] != B || ls[1] != T)
      fail("forward output logits is %s, expected [%lld, %lld, vocab]",
           logits.type.str().c_str(), (long long)B, (long long)T);
    const int64_t V = ls[2];
    const int64_t at = (L - 1) * V;  // row 0, position L - 1
    // Logits may be wider than the input vocabulary (padded heads) or than the
    // tokenizer: sample only ids the model can read back and the tokenizer decode.
    int64_t n = V;
    if (vocab > 0) n = std::min(n, vocab);
    if (idLimit > 0) n = std::min(n, idLimit);
    row.resize(n);
    for (int64_t v = 0; v < (int64_t)row.size(); ++v)
      row[v] = logits.type.dtype == DType::F64 ? logits.as<double>()[at + v]
                                               : (double)logits.as<float>()[at + v];
    double u = uniform01(counterRandom(o.seed, RngStream::Sample, (uint64_t)i));
    int64_t tok = sampleToken(row, o.temperature, o.topK, u);
    context.push_back((int32_t)tok);
    emit((int32_t)tok);
    if (tok == stopId) break;
  }
}

}  // namespace lmrt

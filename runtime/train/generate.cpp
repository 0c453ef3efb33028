/* Implements: sampling text from a plan (see generate.h): the context window,
   the forward path, and the cached path over the prefill and decode programs. */
#include "runtime/train/generate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/data/counter_rng.h"
#include "runtime/exec/session.h"
#include "runtime/train/program_io.h"
#include "runtime/train/token_sampler.h"

namespace lmrt {

int64_t contextKeep(int64_t window) { return std::max<int64_t>(1, window / 2); }

void generate(Session &s, const SampleOptions &o, const std::function<bool(unsigned char)> &emit) {
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
  generateIds(s, o, std::move(context), 256, -1, [&](int32_t id) { return emit((unsigned char)id); });
}

namespace {

/* The logits of the next token for a context window, one way or the other. */
class LogitSource {
public:
  explicit LogitSource(Session &s) : s_(s) {}

  /* Row L - 1 of the forward program's logits for the L tokens at `ctx`. */
  TensorRef forward(const int32_t *ctx, int64_t L) {
    const plan::Input &in = tokenInput(findProgram(s_, "forward"));
    TensorType type = inputType(in);
    const int64_t B = type.shape[0], T = type.shape[1];
    batch_.assign(B * T, 0);
    std::copy(ctx, ctx + L, batch_.begin());
    s_.run("forward", {{in.name(), TensorRef{batch_.data(), type}}});
    return row(s_.output("forward", "logits"), "forward", B, T, L - 1);
  }

  /* The cached path: prefill when nothing is cached (a new window), else decode
     the last token at offset L - 1, its position in the window. */
  TensorRef cached(const int32_t *ctx, int64_t L, int64_t &cachedLen) {
    const int64_t W = window();
    if (cachedLen == 0) {
      batch_.assign(W, 0);
      std::copy(ctx, ctx + L, batch_.begin());
      int32_t zero = 0;
      s_.run("prefill", {{"tokens", TensorRef{batch_.data(), TensorType{DType::I32, {1, W}}}},
                         {"offset", TensorRef{&zero, TensorType{DType::I32, {}}}}});
      cachedLen = L;
      return row(s_.output("prefill", "logits"), "prefill", 1, W, L - 1);
    }
    if (cachedLen != L - 1) fail("internal error: %lld positions cached for a context of %lld", (long long)cachedLen, (long long)L);
    int32_t token = ctx[L - 1], offset = (int32_t)(L - 1);
    s_.run("decode", {{"tokens", TensorRef{&token, TensorType{DType::I32, {1, 1}}}},
                      {"offset", TensorRef{&offset, TensorType{DType::I32, {}}}}});
    cachedLen = L;
    return row(s_.output("decode", "logits"), "decode", 1, 1, 0);
  }

  /* The window: the prefill program's token count (the caches' length). */
  int64_t window() const { return inputType(tokenInputOf("prefill")).shape[1]; }

private:
  const plan::Input &tokenInputOf(const char *program) const {
    for (const plan::Input &in : findProgram(s_, program).inputs())
      if (in.name() == "tokens") return in;
    fail("program '%s' has no 'tokens' input", program);
  }
  /* Row `at` of batch row 0 of logits [B, T, V], checked. */
  static TensorRef row(TensorRef logits, const char *program, int64_t B, int64_t T, int64_t at) {
    const Shape &ls = logits.shape();
    if (ls.size() != 3 || ls[0] != B || ls[1] != T)
      fail("%s output logits is %s, expected [%lld, %lld, vocab]", program, logits.type.str().c_str(), (long long)B,
           (long long)T);
    const int64_t V = ls[2];
    char *base = static_cast<char *>(logits.data) + at * V * (logits.type.dtype == DType::F64 ? 8 : 4);
    return TensorRef{base, TensorType{logits.type.dtype, {V}}};
  }

  Session &s_;
  std::vector<int32_t> batch_;
};

double at(const TensorRef &row, int64_t v) {
  return row.type.dtype == DType::F64 ? row.as<double>()[v] : (double)row.as<float>()[v];
}

}  // namespace

void checkSampleOptions(const SampleOptions &o) {
  if (o.tokens < 0) fail("--tokens must be >= 0 (got %lld)", (long long)o.tokens);
  if (o.temperature < 0 || !std::isfinite(o.temperature))
    fail("--temperature must be >= 0 (got %g)", o.temperature);
  if (o.topK < 0) fail("--top-k must be >= 0 (got %lld)", (long long)o.topK);
  if (!(o.topP > 0 && o.topP <= 1)) fail("--top-p must be in (0, 1] (got %g)", o.topP);
  if (!(o.repetitionPenalty > 0) || !std::isfinite(o.repetitionPenalty))
    fail("--repetition-penalty must be > 0 (got %g)", o.repetitionPenalty);
  if (std::isnan(o.checkCache)) fail("--check-kv-cache needs a tolerance >= 0");
}

void generateIds(Session &s, const SampleOptions &o, std::vector<int32_t> context, int64_t idLimit,
                 int32_t stopId, const std::function<bool(int32_t)> &emit) {
  checkSampleOptions(o);
  const plan::Input &in = tokenInput(findProgram(s, "forward"));
  int64_t vocab = in.vocab() > 0 ? in.vocab() : s.plan().data().vocab();
  if (context.empty()) fail("generation needs at least one context token");
  for (size_t i = 0; i < context.size(); ++i)
    if (context[i] < 0 || (vocab > 0 && context[i] >= vocab))
      fail("prompt token %d at position %zu is outside the plan's vocabulary (%lld)", context[i], i,
           (long long)vocab);
  const bool useCache = o.kvCache && s.hasProgram("prefill") && s.hasProgram("decode");
  if (o.checkCache >= 0 && !useCache)
    fail("--check-kv-cache compares the decode program with the forward program, but %s",
         o.kvCache ? "this plan has no prefill and decode programs (compile it with this lmc)"
                   : "--no-kv-cache is given");
  LogitSource source(s);
  const int64_t W = useCache ? source.window() : inputType(in).shape[1];
  if (useCache && W > inputType(in).shape[1])
    fail("the plan's prefill window (%lld) is longer than its forward program's (%lld)", (long long)W,
         (long long)inputType(in).shape[1]);

  // The window is context[start, end): at most W tokens, refilled to the last
  // contextKeep(W) when it overflows (generate.h).
  size_t start = context.size() > (size_t)W ? context.size() - (size_t)W : 0;
  int64_t cachedLen = 0;  // positions of the window in the caches
  double maxDiff = 0;
  int64_t checked = 0;
  std::vector<double> row;
  for (int64_t i = 0; i < o.tokens; ++i) {
    if ((int64_t)(context.size() - start) > W) {
      start = context.size() - (size_t)contextKeep(W);
      cachedLen = 0;
    }
    const int64_t L = (int64_t)(context.size() - start);
    const int32_t *ctx = context.data() + start;
    TensorRef logits = useCache ? source.cached(ctx, L, cachedLen) : source.forward(ctx, L);
    // Logits may be wider than the input vocabulary (padded heads) or than the
    // tokenizer: sample only ids the model can read back and the tokenizer decode.
    const int64_t V = logits.shape()[0];
    int64_t n = V;
    if (vocab > 0) n = std::min(n, vocab);
    if (idLimit > 0) n = std::min(n, idLimit);
    row.resize(n);
    for (int64_t v = 0; v < n; ++v) row[v] = at(logits, v);
    if (o.checkCache >= 0) {
      // The cached row was copied out above: the forward run may reuse its arena.
      TensorRef ref = source.forward(ctx, L);
      for (int64_t v = 0; v < n; ++v) {
        double d = std::fabs(row[v] - at(ref, v));
        if (!(d <= o.checkCache))
          fail("--check-kv-cache: token %lld (window position %lld): logit %lld is %.9g with the cache and %.9g "
               "from the forward program, %.3g apart (tolerance %g)", (long long)i, (long long)(L - 1),
               (long long)v, row[v], at(ref, v), d, o.checkCache);
        maxDiff = std::max(maxDiff, d);
      }
      ++checked;
    }
    penalizeRepeats(row, context, o.repetitionPenalty);
    double u = uniform01(counterRandom(o.seed, RngStream::Sample, (uint64_t)i));
    int64_t tok = sampleToken(row, o.temperature, o.topK, u, o.topP);
    context.push_back((int32_t)tok);
    if (!emit((int32_t)tok) || tok == stopId) break;
  }
  if (o.checkCache >= 0)
    std::fprintf(stderr, "lmrt: kv-cache check: %lld tokens, largest logit difference from the forward program "
                 "%.3g (tolerance %g)\n", (long long)checked, maxDiff, o.checkCache);
}

}  // namespace lmrt

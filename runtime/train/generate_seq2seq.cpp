/* Implements: encoder-decoder sampling by re-running the forward program (generate_seq2seq.h). */
#include "runtime/train/generate_seq2seq.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/data/counter_rng.h"
#include "runtime/exec/session.h"
#include "runtime/train/program_io.h"
#include "runtime/train/token_sampler.h"

namespace lmrt {
namespace {

constexpr int32_t kPad = 0, kEos = 1, kDecoderStart = 0;  // T5's ids (the seq2seq transform's)

const plan::Input *findInput(const plan::Program &p, const char *name) {
  for (const plan::Input &in : p.inputs())
    if (in.name() == name) return &in;
  return nullptr;
}

}  // namespace

bool isSeq2SeqPlan(const Session &s) {
  return s.hasProgram("forward") && findInput(findProgram(s, "forward"), "decoder_ids") != nullptr;
}

Seq2SeqForward seq2seqForward(const Session &s) {
  const plan::Program &prog = findProgram(s, "forward");
  const plan::Input *ids = findInput(prog, "ids"), *mask = findInput(prog, "attention_mask"),
                    *dec = findInput(prog, "decoder_ids");
  if (!ids || !mask || !dec || prog.inputs_size() != 3)
    fail("the forward program of an encoder-decoder plan must read exactly ids, attention_mask and decoder_ids "
         "(as models/t5.lm's model does)");
  Seq2SeqForward f{inputType(*ids), inputType(*mask), inputType(*dec)};
  f.rows = f.ids.shape[0], f.seq = f.ids.shape[1], f.targetSeq = f.decoder.shape[1];
  if (f.mask.shape != f.ids.shape || f.decoder.shape[0] != f.rows || f.mask.dtype == DType::I32)
    fail("forward program: attention_mask %s must be a float tensor of the shape of ids %s, decoder_ids %s "
         "must have its rows", f.mask.str().c_str(), f.ids.str().c_str(), f.decoder.str().c_str());
  f.vocab = ids->vocab() > 0 ? ids->vocab() : s.plan().data().vocab();
  return f;
}

void runSeq2SeqForward(Session &s, const Seq2SeqForward &f, const int32_t *ids, const void *mask,
                       const int32_t *decoder) {
  s.run("forward", {{"ids", TensorRef{const_cast<int32_t *>(ids), f.ids}},
                    {"attention_mask", TensorRef{const_cast<void *>(mask), f.mask}},
                    {"decoder_ids", TensorRef{const_cast<int32_t *>(decoder), f.decoder}}});
}

void seq2seqLogitsAt(Session &s, const Seq2SeqForward &f, int64_t row, int64_t position, std::vector<double> &out) {
  TensorRef logits = s.output("forward", "logits");
  const Shape &ls = logits.shape();
  if (ls.size() != 3 || ls[0] != f.rows || ls[1] != f.targetSeq)
    fail("forward output logits is %s, expected [%lld, %lld, vocab]", logits.type.str().c_str(), (long long)f.rows,
         (long long)f.targetSeq);
  // Bytes and EOS only: the sentinels above 255 are span corruption's, not text.
  const int64_t V = std::min<int64_t>(ls[2], 256);
  const int64_t at = (row * f.targetSeq + position) * ls[2];
  out.resize(V);
  for (int64_t v = 0; v < V; ++v)
    out[v] = logits.type.dtype == DType::F64 ? logits.as<double>()[at + v] : (double)logits.as<float>()[at + v];
}

namespace {

/* Row 0 of logits [1, 1, V] (decode's), bytes and EOS only, into `out`. */
void decodedLogits(Session &s, std::vector<double> &out) {
  TensorRef logits = s.output("decode", "logits");
  const Shape &ls = logits.shape();
  if (ls.size() != 3 || ls[0] != 1 || ls[1] != 1)
    fail("decode output logits is %s, expected [1, 1, vocab]", logits.type.str().c_str());
  const int64_t V = std::min<int64_t>(ls[2], 256);
  out.resize(V);
  for (int64_t v = 0; v < V; ++v)
    out[v] = logits.type.dtype == DType::F64 ? logits.as<double>()[v] : (double)logits.as<float>()[v];
}

/* The decoder's cache: encode's and decode's inputs against the forward program's. */
void checkCachedPrograms(const Session &s, const Seq2SeqForward &f) {
  auto input = [&](const char *program, const char *name) {
    const plan::Input *in = findInput(findProgram(s, program), name);
    if (!in) fail("program '%s' of this seq2seq plan reads no '%s' (compile the plan with this lmc)", program, name);
    return inputType(*in);
  };
  const TensorType ids = input("encode", "ids"), mask = input("encode", "attention_mask"),
                   decMask = input("decode", "attention_mask");
  const Shape row{1, f.seq};
  if (ids.shape != row || mask.shape != row || decMask.shape != row || mask.dtype != f.mask.dtype ||
      decMask.dtype != f.mask.dtype)
    fail("the encode and decode programs read ids %s, attention_mask %s and %s; the forward program's rows are %s",
         ids.str().c_str(), mask.str().c_str(), decMask.str().c_str(), f.mask.str().c_str());
  const plan::Input *offset = findInput(findProgram(s, "decode"), "offset");
  if (!offset || offset->vocab() != f.targetSeq)
    fail("the decode program's window is not the forward program's decoder length %lld (compile the plan with "
         "this lmc)", (long long)f.targetSeq);
}

}  // namespace

bool generateSeq2Seq(Session &s, const SampleOptions &o, const std::function<bool(int32_t)> &emit) {
  checkSampleOptions(o);
  const bool cached = o.kvCache && s.hasProgram("encode") && s.hasProgram("decode");
  if (o.checkCache >= 0 && !cached)
    fail("--check-kv-cache compares the decode program with the forward program, but %s",
         o.kvCache ? "this plan has no encode and decode programs (compile it with this lmc)"
                   : "--no-kv-cache is given");
  const Seq2SeqForward f = seq2seqForward(s);
  const int64_t B = f.rows, T = f.seq, S = f.targetSeq, vocab = f.vocab;
  const TensorType &maskType = f.mask;
  if (cached) checkCachedPrograms(s, f);

  // The encoder's row: the prompt's bytes cut to T - 1, then EOS; padding 0 with mask 0.
  std::vector<int32_t> in(B * T, kPad), decoder(B * S, kPad);
  std::vector<float> m32(maskType.dtype == DType::F32 ? B * T : 0, 0.0f);
  std::vector<double> m64(maskType.dtype == DType::F64 ? B * T : 0, 0.0);
  const int64_t n = std::min<int64_t>((int64_t)o.prompt.size(), T - 1);
  for (int64_t i = 0; i < n; ++i) {
    unsigned char c = (unsigned char)o.prompt[i];
    if (c == kPad || c == kEos || (vocab > 0 && c >= vocab))
      fail("prompt byte %u at offset %lld: the encoder reads bytes 2 to 255 (0 and 1 are T5's pad and EOS)", c,
           (long long)i);
    in[i] = c;
  }
  in[n] = kEos;
  for (int64_t i = 0; i <= n; ++i) (m32.empty() ? m64[i] = 1.0 : m32[i] = 1.0f);
  void *maskData = m32.empty() ? (void *)m64.data() : (void *)m32.data();
  decoder[0] = kDecoderStart;
  // Row 0 of the batch is the one-row programs' input.
  const TensorType idsRow{DType::I32, {1, T}}, maskRow{maskType.dtype, {1, T}};
  if (cached)  // the encoder once: every cross-attention's keys and values into the encoder's states
    s.run("encode", {{"ids", TensorRef{in.data(), idsRow}}, {"attention_mask", TensorRef{maskData, maskRow}}});

  std::vector<int32_t> seen{kDecoderStart};  // the repetition penalty's context: the decoder's input
  std::vector<double> row, ref;
  double maxDiff = 0;
  int64_t checked = 0;
  bool eos = false;
  for (int64_t i = 0; i < o.tokens && i < S; ++i) {
    if (cached) {  // decoder position i: its input token, its self-attention keys and values cached
      int32_t token = decoder[i], offset = (int32_t)i;
      s.run("decode", {{"tokens", TensorRef{&token, TensorType{DType::I32, {1, 1}}}},
                       {"offset", TensorRef{&offset, TensorType{DType::I32, {}}}},
                       {"attention_mask", TensorRef{maskData, maskRow}}});
      decodedLogits(s, row);
    } else {
      runSeq2SeqForward(s, f, in.data(), maskData, decoder.data());
      seq2seqLogitsAt(s, f, 0, i, row);
    }
    if (o.checkCache >= 0) {  // the same position from the whole forward program
      runSeq2SeqForward(s, f, in.data(), maskData, decoder.data());
      seq2seqLogitsAt(s, f, 0, i, ref);
      for (size_t v = 0; v < row.size(); ++v) {
        const double d = std::fabs(row[v] - ref[v]);
        if (!(d <= o.checkCache))
          fail("--check-kv-cache: token %lld (decoder position %lld): logit %zu is %.9g with the cache and %.9g "
               "from the forward program, %.3g apart (tolerance %g)", (long long)i, (long long)i, v, row[v], ref[v],
               d, o.checkCache);
        maxDiff = std::max(maxDiff, d);
      }
      ++checked;
    }
    penalizeRepeats(row, seen, o.repetitionPenalty);
    double u = uniform01(counterRandom(o.seed, RngStream::Sample, (uint64_t)i));
    const int32_t tok = (int32_t)sampleToken(row, o.temperature, o.topK, u, o.topP);
    if (tok == kEos) {
      eos = true;
      break;
    }
    if (!emit(tok)) break;
    seen.push_back(tok);
    if (i + 1 < S) decoder[i + 1] = tok;
  }
  if (o.checkCache >= 0)
    std::fprintf(stderr, "lmrt: kv-cache check: %lld tokens, largest logit difference from the forward program "
                 "%.3g (tolerance %g)\n", (long long)checked, maxDiff, o.checkCache);
  return eos;
}

std::vector<std::vector<int32_t>> greedySeq2SeqBatch(Session &s, const Seq2SeqForward &f, const int32_t *ids,
                                                     const void *mask, int64_t rows, int64_t maxTokens) {
  if (rows < 1 || rows > f.rows) fail("greedySeq2SeqBatch: %lld rows of a batch of %lld", (long long)rows, (long long)f.rows);
  std::vector<int32_t> decoder((size_t)(f.rows * f.targetSeq), kPad);  // every row starts from id 0 (kDecoderStart)
  std::vector<std::vector<int32_t>> out((size_t)rows);
  std::vector<bool> done((size_t)rows, false);
  std::vector<double> logits;
  int64_t open = rows;
  // One forward run a step for the whole batch; row r reads its logits at
  // position i, which (the decoder being causal) depend only on its ids up to i.
  for (int64_t i = 0; i < maxTokens && i < f.targetSeq && open > 0; ++i) {
    runSeq2SeqForward(s, f, ids, mask, decoder.data());
    for (int64_t r = 0; r < rows; ++r) {
      if (done[(size_t)r]) continue;
      seq2seqLogitsAt(s, f, r, i, logits);
      // Greedy: the temperature-0 choice of lmrt sample --temperature 0 (the lower id on ties).
      const int32_t tok = (int32_t)sampleToken(logits, 0.0, 0, 0.0);
      if (tok == kEos) {
        done[(size_t)r] = true, --open;
        continue;
      }
      out[(size_t)r].push_back(tok);
      if (i + 1 < f.targetSeq) decoder[(size_t)(r * f.targetSeq + i + 1)] = tok;
    }
  }
  return out;
}

}  // namespace lmrt

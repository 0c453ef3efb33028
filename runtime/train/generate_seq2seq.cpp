/* Implements: encoder-decoder sampling by re-running the forward program (generate_seq2seq.h). */
#include "runtime/train/generate_seq2seq.h"

#include <cmath>

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

bool generateSeq2Seq(Session &s, const SampleOptions &o, const std::function<bool(int32_t)> &emit) {
  checkSampleOptions(o);
  if (o.checkCache >= 0)
    fail("--check-kv-cache: a seq2seq plan has no cache to check (each token re-runs the forward program)");
  const plan::Program &prog = findProgram(s, "forward");
  const plan::Input *ids = findInput(prog, "ids"), *mask = findInput(prog, "attention_mask"),
                    *dec = findInput(prog, "decoder_ids");
  if (!ids || !mask || !dec || prog.inputs_size() != 3)
    fail("the forward program of an encoder-decoder plan must read exactly ids, attention_mask and decoder_ids "
         "(as models/t5.lm's model does)");
  const TensorType idsType = inputType(*ids), maskType = inputType(*mask), decType = inputType(*dec);
  const int64_t B = idsType.shape[0], T = idsType.shape[1], S = decType.shape[1];
  if (maskType.shape != idsType.shape || decType.shape[0] != B || maskType.dtype == DType::I32)
    fail("forward program: attention_mask %s must be a float tensor of the shape of ids %s, decoder_ids %s "
         "must have its rows", maskType.str().c_str(), idsType.str().c_str(), decType.str().c_str());
  const int64_t vocab = ids->vocab() > 0 ? ids->vocab() : s.plan().data().vocab();

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

  std::vector<int32_t> seen{kDecoderStart};  // the repetition penalty's context: the decoder's input
  std::vector<double> row;
  for (int64_t i = 0; i < o.tokens && i < S; ++i) {
    s.run("forward", {{"ids", TensorRef{in.data(), idsType}},
                      {"attention_mask", TensorRef{maskData, maskType}},
                      {"decoder_ids", TensorRef{decoder.data(), decType}}});
    TensorRef logits = s.output("forward", "logits");
    const Shape &ls = logits.shape();
    if (ls.size() != 3 || ls[0] != B || ls[1] != S)
      fail("forward output logits is %s, expected [%lld, %lld, vocab]", logits.type.str().c_str(), (long long)B,
           (long long)S);
    // Bytes and EOS only: the sentinels above 255 are span corruption's, not text.
    const int64_t V = std::min<int64_t>(ls[2], 256);
    row.resize(V);
    for (int64_t v = 0; v < V; ++v)
      row[v] = logits.type.dtype == DType::F64 ? logits.as<double>()[i * ls[2] + v]
                                                : (double)logits.as<float>()[i * ls[2] + v];
    penalizeRepeats(row, seen, o.repetitionPenalty);
    double u = uniform01(counterRandom(o.seed, RngStream::Sample, (uint64_t)i));
    const int32_t tok = (int32_t)sampleToken(row, o.temperature, o.topK, u, o.topP);
    if (tok == kEos) return true;
    if (!emit(tok)) return false;
    seen.push_back(tok);
    if (i + 1 < S) decoder[i + 1] = tok;
  }
  return false;
}

}  // namespace lmrt

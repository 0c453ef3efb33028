/* Implements: `lmrt eval --predictions FILE` for seq2seq plans (an
   encoder-decoder model on the seq2seq transform's (input, target) records,
   docs/finetuning.md): every validation record's target generated greedily
   from its encoder row (exactly the row the transform fills: the input cut to
   seq - 1 bytes, then EOS), until EOS or `maxTokens` or the decoder's
   length. With `kvCache` and a plan that has the encode and decode programs,
   a record at a time through them (generate_seq2seq.h: the encoder once, then
   one decode run a token over the key/value caches); otherwise a batch of
   records at a time over the forward program, every token re-running the
   whole model. Both are greedy (the lower id on ties) and write the same
   lines (test/E2E/seq2seq-train.test compares them byte for byte). One JSON line a record, in record order:
     {"record": i, "input": "...", "target": "...", "prediction": "...",
      "eos": true, "answers": ["..."]}
   (answers: the target again, so `lmrt metrics --predictions FILE` scores the
   file as SQuAD answers), and the scores printed on the evaluation lines:
   exact match of the strings, and SQuAD's exact match and token F1 of the
   normalised strings (runtime/metrics/squad.h). */
#pragma once
#include <cstdint>
#include <string>

namespace lmrt {

class Session;

struct Seq2SeqScores {
  uint64_t records = 0;
  uint64_t exact = 0;        // predictions equal to their target, byte for byte
  double exactMatch = 0;     // exact / records
  double squadExactMatch = 0, squadF1 = 0;  // means over the records
  int64_t maxTokens = 0;     // the generation limit used
  bool cached = false;       // generated through the encode and decode programs
};

/* Writes FILE (atomically) for the weights loaded in `session`. An empty `path` runs every batch and writes nothing (a
   rank other than 0 of a mesh whose programs hold collectives: `lmrt eval`). maxTokens <= 0:
   the decoder rows' length (the plan's target_seq). Throws unless the plan's
   transform is seq2seq and its forward program is an encoder-decoder's. */
Seq2SeqScores writeSeq2SeqPredictions(Session &session, const std::string &dataDir, uint64_t seed,
                                      const std::string &path, int64_t maxTokens, bool kvCache = true);

}  // namespace lmrt

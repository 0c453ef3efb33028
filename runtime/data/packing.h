/* Implements: packing several examples into a row (the `pack = true` option
   of the example transforms, example_batches.h).

   The examples are taken in a given order (an epoch's shuffle in training,
   file order in validation) and laid end to end; a row is closed when the
   next example does not fit in what is left of it, and that example starts
   the next row. An example longer than the row is cut to it (as when padded)
   and fills a row alone. Examples are never split across rows, so each keeps
   exactly the tokens it has in a padded row, and attention with the row's
   document ids (doc_ids) sees exactly what the padded row's does. */
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace lmrt {

/* Rows of examples: row i holds records[start[i] .. start[i + 1]). */
struct PackedRows {
  std::vector<uint64_t> records;
  std::vector<uint64_t> start;  // one more than the rows
  uint64_t rows() const { return start.empty() ? 0 : start.size() - 1; }
  uint64_t tokens = 0;          // the real tokens of all rows
};

/* Packs `order` (record indices) into rows of `seq` tokens; `length(record)`
   is the record's tokens in a row, at most seq. With `second` (seq2seq: the
   decoder's rows of `secondSeq` tokens) a record has a part in each of two
   rows of the same index, and a row closes when either part does not fit;
   `tokens` counts the first rows' tokens. */
PackedRows packRows(const std::vector<uint64_t> &order, int64_t seq,
                    const std::function<int64_t(uint64_t)> &length,
                    const std::function<int64_t(uint64_t)> &second = nullptr, int64_t secondSeq = 0);

/* The share of a layout's token cells that hold real tokens: padded (one
   record a row) and packed. */
struct PackingEfficiency {
  uint64_t records = 0, packedRows = 0, tokens = 0;
  double padded = 0, packed = 0;
};
PackingEfficiency packingEfficiency(const PackedRows &p, int64_t seq);

}  // namespace lmrt

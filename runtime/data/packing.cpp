/* Implements: packing examples into rows (see packing.h). */
#include "runtime/data/packing.h"

#include "base/tensor.h"

namespace lmrt {

PackedRows packRows(const std::vector<uint64_t> &order, int64_t seq,
                    const std::function<int64_t(uint64_t)> &length,
                    const std::function<int64_t(uint64_t)> &second, int64_t secondSeq) {
  PackedRows p;
  p.records = order;
  int64_t used = seq, used2 = 0;  // no open row yet
  for (uint64_t i = 0; i < order.size(); ++i) {
    const int64_t n = length(order[i]), m = second ? second(order[i]) : 0;
    if (n < 1 || n > seq) fail("packing: record %llu has %lld tokens in a row of %lld", (unsigned long long)order[i],
                               (long long)n, (long long)seq);
    if (second && (m < 1 || m > secondSeq))
      fail("packing: record %llu has %lld tokens in a second row of %lld", (unsigned long long)order[i], (long long)m,
           (long long)secondSeq);
    if (used + n > seq || (second && used2 + m > secondSeq)) {
      p.start.push_back(i);
      used = used2 = 0;
    }
    used += n;
    used2 += m;
    p.tokens += (uint64_t)n;
  }
  p.start.push_back(order.size());
  return p;
}

PackingEfficiency packingEfficiency(const PackedRows &p, int64_t seq) {
  PackingEfficiency e;
  e.records = p.records.size();
  e.packedRows = p.rows();
  e.tokens = p.tokens;
  if (e.records) e.padded = double(e.tokens) / (double(e.records) * double(seq));
  if (e.packedRows) e.packed = double(e.tokens) / (double(e.packedRows) * double(seq));
  return e;
}

}  // namespace lmrt

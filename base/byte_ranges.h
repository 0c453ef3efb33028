/* Implements: the byte ranges a step and a collective in flight read and write, and the
   one rule for when the step must wait for the collective (it reads what the collective
   writes, or writes what the collective reads or writes). Shared by the CPU backend's
   collectives in flight (runtime/cpu/collectives_in_flight.h) and the CUDA backend's
   collective stream (runtime/cuda/collective_stream.h). */
#pragma once

#include <cstdint>
#include <vector>

namespace lmrt {

struct ByteRange {
  const char *begin, *end;
};

/* The non-empty byte ranges of tensors with `data` and `type.bytes()` (TensorRef,
   DevTensor). */
template <typename Tensors> std::vector<ByteRange> byteRanges(const Tensors &tensors) {
  std::vector<ByteRange> out;
  for (const auto &t : tensors) {
    const char *p = static_cast<const char *>(t.data);
    const int64_t bytes = t.type.bytes();
    if (p && bytes > 0) out.push_back({p, p + bytes});
  }
  return out;
}

/* Whether a range of `a` and one of `b` share a byte. */
inline bool overlap(const std::vector<ByteRange> &a, const std::vector<ByteRange> &b) {
  for (const ByteRange &x : a)
    for (const ByteRange &y : b)
      if (x.begin < y.end && y.begin < x.end) return true;
  return false;
}

/* Whether a step reading `reads` and writing `writes` must wait for a collective in
   flight that reads `jobReads` and writes `jobWrites`. */
inline bool mustWait(const std::vector<ByteRange> &reads, const std::vector<ByteRange> &writes,
                     const std::vector<ByteRange> &jobReads, const std::vector<ByteRange> &jobWrites) {
  return overlap(reads, jobWrites) || overlap(writes, jobWrites) || overlap(writes, jobReads);
}

}  // namespace lmrt

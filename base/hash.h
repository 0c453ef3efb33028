/* Implements: the 64-bit hashes the runtime keys files and RNG streams with:
   FNV-1a-64 (plan and shard checksums, parameter-name stream ids) and splitmix64 (the
   counter-based generator behind parameter init). Header-only, no deps. */
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lmrt {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

inline uint64_t fnv1a64(const void *data, size_t n, uint64_t h = kFnvOffset) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}
inline uint64_t fnv1a64(std::string_view s) { return fnv1a64(s.data(), s.size()); }

/* FNV-1a-64, incremental: update() over consecutive chunks equals one pass. */
struct Fnv1a64 {
  uint64_t h = kFnvOffset;
  void update(const void *data, size_t n) { h = fnv1a64(data, n, h); }
};

/* One splitmix64 output for state `x` (Steele et al.); a good 64-bit mixer, so
   splitmix64(key + i) is a counter-based stream: element i needs no other. */
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace lmrt

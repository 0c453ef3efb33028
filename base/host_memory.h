/* Implements: host memory for the large buffers (parameters, gradients, optimizer
   moments, the arena), backed by transparent huge pages where the kernel offers them.
   Why: the GEMMs stream their weights and weight gradients cold from memory every
   step, and on 4 KiB pages every page is a TLB miss and restarts the hardware
   prefetcher's stream. With THP in its common "madvise" mode nothing is huge unless
   asked for; asking made a GPT-2 small step (batch 4, seq 64) 4.4 % faster on the
   2-core machine (docs/runtime.md, "Huge pages"). Where THP is "never" or absent the
   advice is a no-op and the memory is ordinary. */
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace lmrt {

constexpr size_t kHugePageBytes = size_t{2} << 20;

/* `bytes` of memory aligned to `align` (a power of two, at least 64); from one huge
   page on, aligned to a huge page and advised as huge before its first touch.
   Release with std::free. Null when the allocation fails. */
inline void *allocHost(size_t bytes, size_t align = 64) {
  if (bytes == 0) bytes = 1;
  const size_t rounded = (bytes + align - 1) / align * align;
  if (bytes < kHugePageBytes) return std::aligned_alloc(align, rounded);
  // Not rounded up to whole huge pages: the partial one at the end stays on small
  // pages, so a tensor holds no more resident memory than it has bytes.
  // posix_memalign: aligned_alloc may refuse a size that is not a multiple of the alignment.
  void *p = nullptr;
  if (::posix_memalign(&p, kHugePageBytes, rounded) != 0) return nullptr;
  ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure leaves small pages
  return p;
}

template <typename T> struct HostAllocator {
  using value_type = T;
  HostAllocator() = default;
  template <typename U> HostAllocator(const HostAllocator<U> &) {}
  T *allocate(size_t n) {
    if (n > size_t(-1) / sizeof(T)) throw std::bad_alloc();
    void *p = allocHost(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T *>(p);
  }
  void deallocate(T *p, size_t) { std::free(p); }
  template <typename U> bool operator==(const HostAllocator<U> &) const { return true; }
  template <typename U> bool operator!=(const HostAllocator<U> &) const { return false; }
};

/* The bytes of one large host tensor (zeroed by the vector's constructor). */
using HostBytes = std::vector<char, HostAllocator<char>>;

}  // namespace lmrt

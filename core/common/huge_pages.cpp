#include "common/huge_pages.h"

#include <cstdint>

#include <sys/mman.h>

namespace shardscope {

namespace {
uintptr_t roundUp(uintptr_t v, uintptr_t to) { return (v + to - 1) & ~(to - 1); }
}  // namespace

void* mapHugeAligned(size_t bytes) {
  if (bytes == 0) bytes = 1;
  const size_t size = roundUp(bytes, kHugePageBytes);
  // Map one huge page more and trim, so the range starts on a 2 MiB boundary
  // (a huge page can only back an aligned 2 MiB range).
  const size_t span = size + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t base = roundUp(start, kHugePageBytes);
  if (base > start) munmap(raw, base - start);
  const uintptr_t end = start + span, mine_end = base + size;
  if (end > mine_end) munmap(reinterpret_cast<void*>(mine_end), end - mine_end);
  madvise(reinterpret_cast<void*>(base), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(base);
}

void unmapHugeAligned(void* p, size_t bytes) {
  if (p) munmap(p, roundUp(bytes == 0 ? 1 : bytes, kHugePageBytes));
}

void populatePages(void* p, size_t bytes) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older kernels answer EINVAL
#endif
  constexpr uintptr_t kPage = 4096;
  const uintptr_t from = roundUp(reinterpret_cast<uintptr_t>(p), kPage);
  const uintptr_t to = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kPage - 1);
  const uintptr_t huge_from = roundUp(from, kHugePageBytes), huge_to = to & ~(kHugePageBytes - 1);
  if (huge_to > huge_from) (void)madvise(reinterpret_cast<void*>(huge_from), huge_to - huge_from, MADV_HUGEPAGE);
  if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
}

}  // namespace shardscope

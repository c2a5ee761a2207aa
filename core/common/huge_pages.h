// Anonymous memory the kernel is asked to back with transparent huge pages
// (MADV_HUGEPAGE; THP is commonly "madvise"). Why: the big one-pass stores —
// a trace file's bytes, its parsed records, event-log chunks — are bounded by
// the first touch of fresh memory, one page fault per 4 KiB (20-30 µs each on
// the virtual machines ShardScope is tested on), and a huge page takes one
// fault per 2 MiB; on any machine it also spares the TLB. Advice only: where
// THP is off the memory is ordinary pages and everything still works.
#pragma once

#include <cstddef>
#include <memory>

namespace shardscope {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

// `bytes` of fresh, zero-on-first-touch memory starting on a 2 MiB boundary,
// advised for huge pages; nullptr when the system gives no memory.
void* mapHugeAligned(size_t bytes);
void unmapHugeAligned(void* p, size_t bytes);

// Advises the 2 MiB-aligned part of [p, p + bytes) (memory not touched yet,
// e.g. a freshly reserved vector's) for huge pages.
void adviseHugePages(void* p, size_t bytes);

struct HugeBytesDeleter {
  size_t bytes = 0;
  void operator()(char* p) const { unmapHugeAligned(p, bytes); }
};
using HugeBytes = std::unique_ptr<char[], HugeBytesDeleter>;

// Throws std::bad_alloc when the system gives no memory.
HugeBytes allocateHugeBytes(size_t bytes);

}  // namespace shardscope

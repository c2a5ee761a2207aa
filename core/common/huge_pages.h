// Anonymous memory the kernel is asked to back with transparent huge pages
// (MADV_HUGEPAGE; THP is commonly "madvise"), for the event-log slabs
// (common/host_block_pool.h): long-lived and reused, so a huge page's one
// fault per 2 MiB (not 512) and its TLB reach pay off. Not for a trace's
// one-shot buffers: with "madvise" defrag a huge-page fault may compact
// memory first, which stalled them once the page cache held the trace
// (core/kineto/trace_file.cpp). Advice only: where THP is off the memory is
// ordinary pages and everything still works.
#pragma once

#include <cstddef>

namespace shardscope {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

// `bytes` of fresh, zero-on-first-touch memory starting on a 2 MiB boundary,
// advised for huge pages; nullptr when the system gives no memory.
void* mapHugeAligned(size_t bytes);
void unmapHugeAligned(void* p, size_t bytes);

// Maps the whole pages inside [p, p + bytes) writable now, in one call
// (MADV_POPULATE_WRITE, Linux 5.14), rather than one fault per 4 KiB page as
// each is first written: on this project's VM a fault costs about 17 µs and
// populating first halves the cost of filling fresh memory (100 MB: 0.47 s
// written fresh, 0.03 + 0.22 s populated first). Contents are unchanged; a
// no-op where the kernel lacks it. For a large array about to be filled
// (a trace's event records), never for memory that may stay unused.
void populatePages(void* p, size_t bytes);

}  // namespace shardscope

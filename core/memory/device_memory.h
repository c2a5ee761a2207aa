// Where a Buffer's bytes live on a GPU run. The interface sits beside the
// ledger (which holds a pointer to it) so Buffer needs nothing from device/;
// core/cuda's caching allocator implements it.
#pragma once

#include <cstddef>

#include "trace/event.h"

namespace shardscope {

// Device memory for Buffer<T>, found through the rank's MemoryLedger. The
// allocator books the ledger itself. allocate() returns zeroed memory (ordered
// on the current queue, or complete at return on a host thread); free() from a
// queue's thread is safe for work already launched on that queue.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* allocate(size_t bytes, Category category) = 0;
  virtual void free(void* ptr) noexcept = 0;
};

}  // namespace shardscope

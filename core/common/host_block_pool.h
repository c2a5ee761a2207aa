// Fixed-size 512 KiB blocks for event-log chunks, carved from 2 MiB slabs
// advised for huge pages (common/huge_pages.h: filing events is bounded by
// the first touch of fresh memory, and a huge page takes one fault per 2 MiB,
// not 512). Not the GPU caching allocator's gpu::BlockPool. Released blocks are kept
// for reuse, so a second run in the same process (the GUI, a test, a
// collector) touches no fresh memory; past kCachedBytes of free blocks, slabs
// with no block in use go back to the system.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace shardscope {

class HostBlockPool {
 public:
  static constexpr size_t kBlockBytes = size_t(512) << 10;
  static constexpr size_t kSlabBytes = size_t(2) << 20;  // one huge page
  static constexpr size_t kBlocksPerSlab = kSlabBytes / kBlockBytes;
  static constexpr size_t kCachedBytes = size_t(256) << 20;

  // The process's pool (event logs of every run share it).
  static HostBlockPool& instance();

  // A block of kBlockBytes, aligned to kBlockBytes, not zeroed; nullptr when
  // the system gives no memory.
  void* allocate();
  // Back to the pool; `block` came from allocate().
  void release(void* block);

  struct Stats {
    size_t slabs = 0;        // mapped
    size_t free_blocks = 0;  // cached for reuse
  };
  Stats stats() const;
  // Bytes of the pool's slabs that are resident (mincore): what the stores
  // built on it hold in memory, huge pages counted whole.
  size_t residentBytes() const;

  HostBlockPool() = default;
  ~HostBlockPool();
  HostBlockPool(const HostBlockPool&) = delete;
  HostBlockPool& operator=(const HostBlockPool&) = delete;

 private:
  bool mapSlabLocked();
  void unmapIdleSlabsLocked();

  mutable std::mutex m_mutex;
  std::vector<void*> m_free;
  std::unordered_map<uintptr_t, size_t> m_inUse;  // slab base -> blocks handed out
};

}  // namespace shardscope

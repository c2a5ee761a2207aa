// The device-free half of the caching allocator: size classes, per-stream free
// lists, cross-stream frees deferred behind events, ledger booking and stats.
// The backend does the real allocations and events (cudaMalloc, cudaEventRecord
// in CachingAllocator; host memory and fake events in the host tests).
// A block belongs to the stream it was allocated on: freed, it is reusable at once
// by later work on that stream (stream order makes it safe) and never handed to
// another stream; if other streams used it (markUsedOn), it waits until an event
// recorded on each of them at free time has completed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda/stream_handle.h"
#include "memory/memory_ledger.h"

namespace shardscope::gpu {

// Requests up to this size round up to 512 bytes; larger ones to 1/8 of their
// power of two (at most 12.5% waste, and few distinct classes to reuse).
inline constexpr size_t kSmallLimit = size_t{1} << 20;
inline constexpr size_t kSmallGranule = 512;
// bytes: the size class a request of `bytes` (> 0) is served from.
size_t sizeClassBytes(size_t bytes);

class BlockPoolBackend {
 public:
  using EventId = void*;
  virtual ~BlockPoolBackend() = default;
  // nullptr when the device is out of memory; other failures throw.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* ptr) = 0;
  virtual EventId recordEvent(StreamHandle stream) = 0;
  virtual bool eventDone(EventId event) = 0;
  virtual void destroyEvent(EventId event) = 0;
};

// "Allocated" is what callers asked for (what the ledger books); "reserved" is
// what the pool holds from the backend: allocated + size-class rounding + blocks
// cached free + blocks waiting on another stream's event. Reserved is what the
// device sees as used; the difference is the allocator's cache, not a leak.
struct AllocatorStats {
  int64_t allocated_bytes = 0;        // bytes, live requests as asked
  int64_t allocated_peak = 0;
  int64_t in_use_bytes = 0;           // bytes, size classes of live blocks
  int64_t reserved_bytes = 0;         // bytes, everything held from the backend
  int64_t reserved_peak = 0;
  int64_t cached_bytes = 0;           // bytes, free blocks ready for reuse
  int64_t pending_bytes = 0;          // bytes, freed blocks waiting on events
  int64_t backend_allocs = 0;         // cudaMalloc calls
  int64_t backend_frees = 0;          // cudaFree calls
  int64_t reuses = 0;                 // requests served from the cache
  int64_t live_blocks = 0;
};

class BlockPool {
 public:
  // ledger may be null (no booking). name is used in error messages ("rank 3 GPU 0").
  BlockPool(BlockPoolBackend& backend, MemoryLedger* ledger, std::string name);
  // Gives every block back to the backend, live ones too: buffers must not outlive the pool.
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // bytes > 0. Throws std::runtime_error when the backend is out of memory even
  // after releasing the cache; the message carries the stats.
  void* allocate(size_t bytes, Category category, StreamHandle stream);
  void free(void* ptr);
  // Work on `stream` (not the owner) uses the block: its free waits for that work.
  void markUsedOn(void* ptr, StreamHandle stream);
  // Gives every cached free block back to the backend (pending ones stay).
  void releaseCached();
  AllocatorStats stats() const;
  std::string describe() const;  // one line of stats for messages and logs

 private:
  struct Block {
    size_t size = 0;       // bytes, its size class
    size_t requested = 0;  // bytes, asked by the live allocation
    StreamHandle stream = nullptr;
    Category category = Category::Workspace;
    bool live = false;
    std::vector<StreamHandle> used_on;
  };
  struct Pending {
    void* ptr;
    std::vector<BlockPoolBackend::EventId> events;
  };
  using FreeKey = std::pair<StreamHandle, size_t>;

  void processPendingLocked();
  void releaseCachedLocked();
  std::string describeLocked() const;

  BlockPoolBackend& m_backend;
  MemoryLedger* m_ledger;
  std::string m_name;
  mutable std::mutex m_mutex;
  std::unordered_map<void*, Block> m_blocks;
  std::map<FreeKey, std::vector<void*>> m_free;
  std::vector<Pending> m_pending;
  AllocatorStats m_stats;
};

}  // namespace shardscope::gpu

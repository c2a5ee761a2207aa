#include "memory/host_allocation.h"

#include <cstdlib>

namespace shardscope {
namespace {

// Blocks below this come from malloc's own bins quickly; above it, malloc
// (and the sanitizers' allocators) map and unmap each one.
constexpr size_t kCachedFrom = size_t(64) << 10;
// A thread keeps at most this much: a step's working set of a small model,
// never the model state of a large one.
constexpr size_t kCacheBytes = size_t(8) << 20;
constexpr int kCacheSlots = 8;

struct ThreadCache {
  struct Slot {
    void* block = nullptr;
    size_t bytes = 0;
  };
  Slot slots[kCacheSlots];
  size_t held = 0;

  ~ThreadCache() {
    for (Slot& s : slots) std::free(s.block);
  }
  void* take(size_t bytes) {
    for (Slot& s : slots)
      if (s.block && s.bytes == bytes) {
        held -= bytes;
        s.bytes = 0;
        void* b = s.block;
        s.block = nullptr;
        return b;
      }
    return nullptr;
  }
  bool keep(void* block, size_t bytes) {
    if (held + bytes > kCacheBytes) return false;
    for (Slot& s : slots)
      if (!s.block) {
        s = {block, bytes};
        held += bytes;
        return true;
      }
    return false;
  }
};

ThreadCache& cache() {
  thread_local ThreadCache c;
  return c;
}

}  // namespace

void* hostAllocate(size_t bytes) {
  if (bytes >= kCachedFrom)
    if (void* b = cache().take(bytes)) return b;
  return std::aligned_alloc(64, bytes);
}

void hostFree(void* block, size_t bytes) {
  if (!block) return;
  if (bytes >= kCachedFrom && cache().keep(block, bytes)) return;
  std::free(block);
}

}  // namespace shardscope

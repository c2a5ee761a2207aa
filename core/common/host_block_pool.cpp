#include "common/host_block_pool.h"

#include <algorithm>

#include <sys/mman.h>
#include <unistd.h>

#include "common/huge_pages.h"

namespace shardscope {

namespace {
uintptr_t slabOf(const void* block) {
  return reinterpret_cast<uintptr_t>(block) & ~(uintptr_t(HostBlockPool::kSlabBytes) - 1);
}
}  // namespace

HostBlockPool& HostBlockPool::instance() {
  // Never destroyed: event logs may be freed by static destructors after it.
  static HostBlockPool* pool = new HostBlockPool;
  return *pool;
}

HostBlockPool::~HostBlockPool() {
  for (const auto& [base, used] : m_inUse) unmapHugeAligned(reinterpret_cast<void*>(base), kSlabBytes);
}

bool HostBlockPool::mapSlabLocked() {
  void* slab = mapHugeAligned(kSlabBytes);
  if (!slab) return false;
  const auto base = reinterpret_cast<uintptr_t>(slab);
  m_inUse.emplace(base, 0);
  for (size_t i = kBlocksPerSlab; i-- > 0;) m_free.push_back(reinterpret_cast<void*>(base + i * kBlockBytes));
  return true;
}

void* HostBlockPool::allocate() {
  std::lock_guard lock(m_mutex);
  if (m_free.empty() && !mapSlabLocked()) return nullptr;
  void* block = m_free.back();
  m_free.pop_back();
  ++m_inUse[slabOf(block)];
  return block;
}

void HostBlockPool::release(void* block) {
  if (!block) return;
  std::lock_guard lock(m_mutex);
  --m_inUse[slabOf(block)];
  m_free.push_back(block);
  if (m_free.size() * kBlockBytes > kCachedBytes) unmapIdleSlabsLocked();
}

void HostBlockPool::unmapIdleSlabsLocked() {
  // Rare (only past the cache bound), so passes over the free list are fine.
  // Slabs with no block in use go back until the cache is under its bound.
  std::vector<uintptr_t> idle;
  size_t cached = m_free.size() * kBlockBytes;
  for (const auto& [base, used] : m_inUse) {
    if (cached <= kCachedBytes) break;
    if (used != 0) continue;
    idle.push_back(base);
    cached -= kSlabBytes;
  }
  if (idle.empty()) return;
  std::sort(idle.begin(), idle.end());
  const auto isIdle = [&](void* b) { return std::binary_search(idle.begin(), idle.end(), slabOf(b)); };
  m_free.erase(std::remove_if(m_free.begin(), m_free.end(), isIdle), m_free.end());
  for (uintptr_t base : idle) {
    unmapHugeAligned(reinterpret_cast<void*>(base), kSlabBytes);
    m_inUse.erase(base);
  }
}

size_t HostBlockPool::residentBytes() const {
  std::lock_guard lock(m_mutex);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec(kSlabBytes / page);
  size_t pages = 0;
  for (const auto& [base, used] : m_inUse) {
    if (mincore(reinterpret_cast<void*>(base), kSlabBytes, vec.data()) != 0) continue;
    for (unsigned char v : vec) pages += v & 1;
  }
  return pages * page;
}

HostBlockPool::Stats HostBlockPool::stats() const {
  std::lock_guard lock(m_mutex);
  return {m_inUse.size(), m_free.size()};
}

}  // namespace shardscope

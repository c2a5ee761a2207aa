// BlockPool: see block_pool.h. One mutex: the streams of a rank allocate from
// their own threads, and none of these paths blocks on the device.
#include "cuda/block_pool.h"

#include <algorithm>
#include <bit>
#include <exception>
#include <stdexcept>

#include "common/units.h"

namespace shardscope::gpu {

size_t sizeClassBytes(size_t bytes) {
  if (bytes == 0) throw std::invalid_argument("sizeClassBytes: bytes = 0 has no size class");
  if (bytes <= kSmallLimit) return (bytes + kSmallGranule - 1) / kSmallGranule * kSmallGranule;
  const size_t power = std::bit_floor(bytes);
  const size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

BlockPool::BlockPool(BlockPoolBackend& backend, MemoryLedger* ledger, std::string name)
    : m_backend(backend), m_ledger(ledger), m_name(std::move(name)) {}

BlockPool::~BlockPool() {
  std::lock_guard lock(m_mutex);
  for (Pending& p : m_pending) {
    for (auto event : p.events) m_backend.destroyEvent(event);
  }
  m_pending.clear();
  for (auto& [ptr, block] : m_blocks) {
    try {
      m_backend.release(ptr);
    } catch (const std::exception&) {
      // A lost context fails every release; the memory goes with it.
    }
  }
  m_blocks.clear();
}

void* BlockPool::allocate(size_t bytes, Category category, StreamHandle stream) {
  if (bytes == 0) throw std::invalid_argument("BlockPool::allocate(" + m_name + "): bytes = 0");
  const size_t cls = sizeClassBytes(bytes);
  std::lock_guard lock(m_mutex);
  processPendingLocked();
  void* ptr = nullptr;
  auto it = m_free.find({stream, cls});
  if (it != m_free.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    m_stats.cached_bytes -= static_cast<int64_t>(cls);
    ++m_stats.reuses;
  } else {
    ptr = m_backend.allocate(cls);
    if (!ptr) {
      releaseCachedLocked();  // another stream's cache may be what the device lacks
      ptr = m_backend.allocate(cls);
    }
    if (!ptr) {
      throw std::runtime_error("out of device memory on " + m_name + ": a request of " +
                               std::to_string(bytes) + " bytes (size class " +
                               std::to_string(cls) + ") failed after releasing the cache; " +
                               describeLocked());
    }
    ++m_stats.backend_allocs;
    m_stats.reserved_bytes += static_cast<int64_t>(cls);
    m_stats.reserved_peak = std::max(m_stats.reserved_peak, m_stats.reserved_bytes);
    m_blocks[ptr] = Block{cls, 0, stream, category, false, {}};
  }
  Block& block = m_blocks.at(ptr);
  block.requested = bytes;
  block.category = category;
  block.live = true;
  m_stats.allocated_bytes += static_cast<int64_t>(bytes);
  m_stats.allocated_peak = std::max(m_stats.allocated_peak, m_stats.allocated_bytes);
  m_stats.in_use_bytes += static_cast<int64_t>(cls);
  ++m_stats.live_blocks;
  if (m_ledger) m_ledger->onAlloc(category, static_cast<int64_t>(bytes));
  return ptr;
}

void BlockPool::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard lock(m_mutex);
  auto it = m_blocks.find(ptr);
  if (it == m_blocks.end() || !it->second.live) {
    throw std::logic_error("BlockPool::free(" + m_name +
                           "): pointer is not a live allocation of this pool (double free, or "
                           "memory from another allocator)");
  }
  Block& block = it->second;
  block.live = false;
  m_stats.allocated_bytes -= static_cast<int64_t>(block.requested);
  m_stats.in_use_bytes -= static_cast<int64_t>(block.size);
  --m_stats.live_blocks;
  if (m_ledger) m_ledger->onFree(block.category, static_cast<int64_t>(block.requested));
  block.requested = 0;
  if (block.used_on.empty()) {
    m_free[{block.stream, block.size}].push_back(ptr);
    m_stats.cached_bytes += static_cast<int64_t>(block.size);
    return;
  }
  Pending pending{ptr, {}};
  for (StreamHandle s : block.used_on) pending.events.push_back(m_backend.recordEvent(s));
  block.used_on.clear();
  m_pending.push_back(std::move(pending));
  m_stats.pending_bytes += static_cast<int64_t>(block.size);
}

void BlockPool::markUsedOn(void* ptr, StreamHandle stream) {
  std::lock_guard lock(m_mutex);
  auto it = m_blocks.find(ptr);
  if (it == m_blocks.end() || !it->second.live) {
    throw std::logic_error("BlockPool::markUsedOn(" + m_name + "): pointer is not live here");
  }
  Block& block = it->second;
  if (stream == block.stream) return;
  if (std::find(block.used_on.begin(), block.used_on.end(), stream) == block.used_on.end()) {
    block.used_on.push_back(stream);
  }
}

void BlockPool::processPendingLocked() {
  auto done = [&](Pending& p) {
    for (auto event : p.events) {
      if (!m_backend.eventDone(event)) return false;
    }
    return true;
  };
  for (size_t i = 0; i < m_pending.size();) {
    if (!done(m_pending[i])) {
      ++i;
      continue;
    }
    for (auto event : m_pending[i].events) m_backend.destroyEvent(event);
    const Block& block = m_blocks.at(m_pending[i].ptr);
    m_free[{block.stream, block.size}].push_back(m_pending[i].ptr);
    m_stats.pending_bytes -= static_cast<int64_t>(block.size);
    m_stats.cached_bytes += static_cast<int64_t>(block.size);
    m_pending[i] = std::move(m_pending.back());
    m_pending.pop_back();
  }
}

void BlockPool::releaseCached() {
  std::lock_guard lock(m_mutex);
  processPendingLocked();
  releaseCachedLocked();
}

void BlockPool::releaseCachedLocked() {
  for (auto& [key, ptrs] : m_free) {
    for (void* ptr : ptrs) {
      m_backend.release(ptr);
      m_blocks.erase(ptr);
      ++m_stats.backend_frees;
      m_stats.reserved_bytes -= static_cast<int64_t>(key.second);
      m_stats.cached_bytes -= static_cast<int64_t>(key.second);
    }
  }
  m_free.clear();
}

AllocatorStats BlockPool::stats() const {
  std::lock_guard lock(m_mutex);
  return m_stats;
}

std::string BlockPool::describe() const {
  std::lock_guard lock(m_mutex);
  return describeLocked();
}

std::string BlockPool::describeLocked() const {
  auto mib = [](int64_t b) { return bytesText(static_cast<double>(b), 0, ByteUnit::MiB); };
  return "allocated " + mib(m_stats.allocated_bytes) + " (peak " + mib(m_stats.allocated_peak) +
         "), reserved " + mib(m_stats.reserved_bytes) + " (peak " + mib(m_stats.reserved_peak) +
         "; cached free " + mib(m_stats.cached_bytes) + ", waiting on other streams " +
         mib(m_stats.pending_bytes) + "), " + std::to_string(m_stats.live_blocks) +
         " live blocks";
}

}  // namespace shardscope::gpu

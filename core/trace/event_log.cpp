#include "trace/event_log.h"

#include <cstdlib>
#include <type_traits>

namespace shardscope {

static_assert(std::is_trivially_destructible_v<EventLog::Chunk>, "chunks are freed with std::free");

EventLog::EventLog() : m_chunks(new std::atomic<Chunk*>[kMaxChunks]) {
  for (size_t i = 0; i < kMaxChunks; ++i) m_chunks[i].store(nullptr, std::memory_order_relaxed);
}

EventLog::~EventLog() {
  for (size_t i = 0; i < kMaxChunks; ++i) std::free(m_chunks[i].load(std::memory_order_relaxed));
}

EventLog::Chunk* EventLog::chunkFor(size_t chunk_index) {
  Chunk* chunk = m_chunks[chunk_index].load(std::memory_order_acquire);
  if (chunk) return chunk;
  // First writer into a chunk allocates it; a losing racer frees its copy.
  // calloc: the OS hands out zeroed pages lazily, so a fresh chunk costs no
  // 530 KB memset on the producer's path; all-zero bytes are a valid "not
  // ready" state for the lock-free uint8 atomics.
  auto* fresh = static_cast<Chunk*>(std::calloc(1, sizeof(Chunk)));
  if (!fresh) return nullptr;
  Chunk* expected = nullptr;
  if (m_chunks[chunk_index].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    return fresh;
  }
  std::free(fresh);
  return expected;
}

void EventLog::record(const Event& event) {
  const size_t slot = m_next.fetch_add(1, std::memory_order_relaxed);
  const size_t chunk_index = slot / kChunkEvents;
  if (chunk_index >= kMaxChunks) {
    m_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Chunk* chunk = chunkFor(chunk_index);
  if (!chunk) {
    m_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const size_t i = slot % kChunkEvents;
  chunk->events[i] = event;
  chunk->ready[i].store(1, std::memory_order_release);
  // Pre-allocate the next chunk from the middle of this one, so a producer
  // rarely pays the allocation on the slot that crosses the boundary.
  if (i == kChunkEvents / 2 && chunk_index + 1 < kMaxChunks) chunkFor(chunk_index + 1);
}

size_t EventLog::publishedCount() const {
  size_t n = m_published.load(std::memory_order_acquire);
  const size_t claimed = m_next.load(std::memory_order_acquire);
  const size_t limit = claimed < kMaxChunks * kChunkEvents ? claimed : kMaxChunks * kChunkEvents;
  while (n < limit) {
    Chunk* chunk = m_chunks[n / kChunkEvents].load(std::memory_order_acquire);
    if (!chunk || !chunk->ready[n % kChunkEvents].load(std::memory_order_acquire)) break;
    ++n;
  }
  // Monotonic max: concurrent readers may race here; never move backwards.
  size_t cur = m_published.load(std::memory_order_relaxed);
  while (cur < n && !m_published.compare_exchange_weak(cur, n, std::memory_order_acq_rel)) {
  }
  return n;
}

size_t EventLog::readFrom(size_t from, std::vector<Event>& out) const {
  const size_t n = publishedCount();
  for (size_t i = from; i < n; ++i) {
    const Chunk* chunk = m_chunks[i / kChunkEvents].load(std::memory_order_acquire);
    out.push_back(chunk->events[i % kChunkEvents]);
  }
  return n > from ? n : from;
}

std::vector<Event> EventLog::snapshot() const {
  std::vector<Event> out;
  out.reserve(publishedCount());
  readFrom(0, out);
  return out;
}

}  // namespace shardscope

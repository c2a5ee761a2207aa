// Per-rank append-only event log: many producers (the rank's host and stream
// threads), one or more readers. record() never blocks: a slot is claimed with
// one fetch_add, written, then published with a release flag; readers only see
// the published prefix. Chunks are allocated on demand and never move.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "trace/event.h"

namespace shardscope {

class EventLog {
 public:
  static constexpr size_t kChunkEvents = 8192;
  static constexpr size_t kMaxChunks = 16384;  // 134M events per rank

  EventLog();
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Thread-safe, lock-free for producers. Drops (and counts) events past capacity.
  void record(const Event& event);

  // Number of events whose slots are published contiguously from index 0.
  size_t publishedCount() const;
  // Copies published events [from, publishedCount()) into out; returns the new cursor.
  size_t readFrom(size_t from, std::vector<Event>& out) const;
  // All published events (a snapshot).
  std::vector<Event> snapshot() const;
  uint64_t dropped() const { return m_dropped.load(std::memory_order_relaxed); }

 private:
 public:
  struct Chunk {
    Event events[kChunkEvents];
    std::atomic<uint8_t> ready[kChunkEvents];
  };

 private:
  Chunk* chunkFor(size_t chunk_index);

  std::atomic<size_t> m_next{0};
  mutable std::atomic<size_t> m_published{0};  // cache of the contiguous published prefix
  std::atomic<uint64_t> m_dropped{0};
  std::unique_ptr<std::atomic<Chunk*>[]> m_chunks;
};

}  // namespace shardscope

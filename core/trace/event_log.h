// Per-rank append-only event log: several producers (the rank's host and
// stream threads), one or more readers. Each producing thread appends to a
// buffer of its own: a plain store of the event and a release store of the
// buffer's count, no read-modify-write on a shared counter. Readers merge the
// buffers, under a mutex, into one sequence that keeps each thread's order;
// an index, once read, always means the same event. Chunks are allocated on
// demand and never move. A thread finds its buffer through a small
// thread-local cache keyed by the log's generation (unique per log, so a log
// created where a destroyed one lived never matches its entries); a thread
// that exits hands its buffer back for the next thread, events kept.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "trace/event.h"

namespace shardscope {

class EventLog {
 public:
  // A chunk is one BlockPool block (512 KiB): 8191 events and the link.
  static constexpr size_t kChunkEvents = 8191;
  static constexpr size_t kMaxChunks = 16384;  // 134M events per rank

  EventLog() : EventLog(kMaxChunks) {}
  // At most max_chunks chunks over all of the log's buffers (a test makes it small).
  explicit EventLog(size_t max_chunks);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Thread-safe, lock-free for producers (a thread's first event into a log
  // takes a short mutex to find its buffer). Drops (and counts) events past capacity.
  void record(const Event& event);
  // A batch from one thread (a collector filing a remote rank's events): one
  // buffer lookup and one publish per chunk, in order.
  void record(const Event* events, size_t count);

  // Number of events readable from index 0 (merges what the producers published).
  size_t publishedCount() const;
  // Copies published events [from, publishedCount()) into out; returns the new cursor.
  size_t readFrom(size_t from, std::vector<Event>& out) const;
  // The same, at most max_events of them (a reader that serves in batches).
  size_t readFrom(size_t from, std::vector<Event>& out, size_t max_events) const;
  // All published events (a snapshot).
  std::vector<Event> snapshot() const;
  uint64_t dropped() const { return m_dropped.load(std::memory_order_relaxed); }
  // Producer buffers the log holds: one per thread recording at once, reused after a thread exits.
  size_t bufferCount() const;

  struct Chunk {
    Event events[kChunkEvents];
    Chunk* next;  // set by the producer before any event of the next chunk is published
  };
  struct Buffer;

 private:
  friend struct EventLogThreads;
  Buffer* threadBuffer();
  bool grow(Buffer& buffer);
  void releaseBuffer(uint64_t thread_id);
  void mergeLocked() const;

  const uint64_t m_generation;
  std::atomic<int64_t> m_chunksLeft;
  std::atomic<uint64_t> m_dropped{0};

  // Producers' registry: taken once per thread and log, and briefly by readers.
  mutable std::mutex m_buffersMutex;
  std::vector<std::unique_ptr<Buffer>> m_buffers;

  // Readers' merged sequence: runs of consecutive events in one chunk.
  struct Run {
    size_t start;  // index of `first` in the merged sequence
    const Event* first;
    size_t count;
  };
  mutable std::mutex m_readMutex;
  mutable std::vector<Buffer*> m_readBuffers;
  mutable std::vector<Run> m_runs;
  mutable size_t m_merged = 0;
};

}  // namespace shardscope

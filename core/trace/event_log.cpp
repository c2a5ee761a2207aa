#include "trace/event_log.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <unordered_set>
#include <utility>

#include "common/host_block_pool.h"

namespace shardscope {

static_assert(std::is_trivially_destructible_v<EventLog::Chunk>, "chunks go back to the pool without destruction");
static_assert(sizeof(EventLog::Chunk) <= HostBlockPool::kBlockBytes, "a chunk is one pool block");

// One producing thread's events (one thread at a time: a buffer changes hands
// only under the log's m_buffersMutex, when its thread has exited).
struct alignas(64) EventLog::Buffer {
  // The producer's line: written on every event, read by readers only through `published`.
  Event* write = nullptr;  // next free slot of the tail chunk
  Event* end = nullptr;    // end of the tail chunk
  Chunk* tail = nullptr;
  size_t count = 0;                   // events written (the producer's copy)
  std::atomic<size_t> published{0};   // events readers may read (release)
  Chunk* head = nullptr;              // set before the first event is published
  uint64_t owner = 0;                 // thread id holding it, 0 when free (m_buffersMutex)
  // The readers' (m_readMutex): how far the merged sequence has taken this buffer.
  alignas(64) size_t merged = 0;
  Chunk* merge_chunk = nullptr;  // chunk holding event `merged - 1`
};

namespace {

struct LogBufferCacheEntry {
  uint64_t generation;
  EventLog::Buffer* buffer;
};
// Most threads record into one log (their rank's); a few more ways cover a
// thread that records into several. Trivial and zero-initialised: no guard
// on the fast path. Generation 0 is never a log's.
constexpr int kLogBufferCacheWays = 4;
thread_local LogBufferCacheEntry t_logBufferCache[kLogBufferCacheWays];
thread_local uint64_t t_logThreadId = 0;
thread_local bool t_logThreadExited = false;  // this thread's buffers were handed back

std::atomic<uint64_t> g_nextLogGeneration{1};
std::atomic<uint64_t> g_nextLogThread{1};

// Generations of the logs alive now: a thread that exits hands its buffers
// back only to these. Never destroyed, so a thread exiting after static
// destructors ran still finds it.
struct LiveEventLogs {
  std::mutex mutex;
  std::unordered_set<uint64_t> generations;
};
LiveEventLogs& liveEventLogs() {
  static LiveEventLogs* logs = new LiveEventLogs;
  return *logs;
}

}  // namespace

// The logs the calling thread holds a buffer in; its destructor (thread exit)
// hands each live one's buffer back.
struct EventLogThreads {
  std::vector<std::pair<EventLog*, uint64_t>> held;
  size_t prune_at = 64;

  ~EventLogThreads() {
    LiveEventLogs& live = liveEventLogs();
    std::lock_guard lock(live.mutex);  // a log is not destroyed while we hand back
    for (const auto& [log, generation] : held)
      if (live.generations.count(generation)) log->releaseBuffer(t_logThreadId);
    for (LogBufferCacheEntry& e : t_logBufferCache) e = LogBufferCacheEntry{0, nullptr};
    t_logThreadExited = true;
  }

  void add(EventLog* log, uint64_t generation) {
    if (held.size() >= prune_at) {  // forget logs destroyed since (a long-lived thread)
      LiveEventLogs& live = liveEventLogs();
      std::lock_guard lock(live.mutex);
      const std::unordered_set<uint64_t>& alive = live.generations;
      std::erase_if(held, [&alive](const auto& h) { return !alive.count(h.second); });
      prune_at = std::max<size_t>(64, 2 * held.size());
    }
    held.emplace_back(log, generation);
  }

  static EventLogThreads& mine() {
    static thread_local EventLogThreads threads;
    return threads;
  }
};

EventLog::EventLog(size_t max_chunks)
    : m_generation(g_nextLogGeneration.fetch_add(1, std::memory_order_relaxed)),
      m_chunksLeft(static_cast<int64_t>(max_chunks)) {
  LiveEventLogs& live = liveEventLogs();
  std::lock_guard lock(live.mutex);
  live.generations.insert(m_generation);
}

EventLog::~EventLog() {
  {
    LiveEventLogs& live = liveEventLogs();
    std::lock_guard lock(live.mutex);
    live.generations.erase(m_generation);
  }
  for (const auto& buffer : m_buffers) {
    for (Chunk* c = buffer->head; c;) {
      Chunk* next = c->next;
      HostBlockPool::instance().release(c);
      c = next;
    }
  }
}

void EventLog::record(const Event& event) {
  const LogBufferCacheEntry& hit = t_logBufferCache[0];
  Buffer* b = hit.generation == m_generation ? hit.buffer : threadBuffer();
  if (b->write == b->end && !grow(*b)) {
    m_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  *b->write++ = event;
  b->published.store(++b->count, std::memory_order_release);
}

void EventLog::record(const Event* events, size_t count) {
  if (count == 0) return;
  const LogBufferCacheEntry& hit = t_logBufferCache[0];
  Buffer* b = hit.generation == m_generation ? hit.buffer : threadBuffer();
  while (count > 0) {
    if (b->write == b->end && !grow(*b)) {
      m_dropped.fetch_add(count, std::memory_order_relaxed);
      return;
    }
    const size_t n = std::min(count, static_cast<size_t>(b->end - b->write));
    std::memcpy(b->write, events, n * sizeof(Event));
    b->write += n;
    b->count += n;
    b->published.store(b->count, std::memory_order_release);
    events += n;
    count -= n;
  }
}

EventLog::Buffer* EventLog::threadBuffer() {
  for (int i = 1; i < kLogBufferCacheWays; ++i) {
    if (t_logBufferCache[i].generation == m_generation) {
      std::swap(t_logBufferCache[0], t_logBufferCache[i]);
      return t_logBufferCache[0].buffer;
    }
  }
  if (!t_logThreadId) t_logThreadId = g_nextLogThread.fetch_add(1, std::memory_order_relaxed);
  Buffer* mine = nullptr;
  bool claimed = false;
  {
    std::lock_guard lock(m_buffersMutex);
    for (const auto& b : m_buffers)  // ours, evicted from the cache
      if (b->owner == t_logThreadId) mine = b.get();
    if (!mine) {
      for (const auto& b : m_buffers)  // one an exited thread handed back
        if (b->owner == 0) {
          mine = b.get();
          break;
        }
      if (!mine) mine = m_buffers.emplace_back(std::make_unique<Buffer>()).get();
      mine->owner = t_logThreadId;
      claimed = true;
    }
  }
  // After exit (a thread_local destructor recording) the buffer stays this
  // thread's for good: nothing is left to hand it back.
  if (claimed && !t_logThreadExited) EventLogThreads::mine().add(this, m_generation);
  for (int i = kLogBufferCacheWays - 1; i > 0; --i) t_logBufferCache[i] = t_logBufferCache[i - 1];
  t_logBufferCache[0] = LogBufferCacheEntry{m_generation, mine};
  return mine;
}

bool EventLog::grow(Buffer& b) {
  // The capacity is the log's: chunks are counted over all buffers.
  if (m_chunksLeft.load(std::memory_order_relaxed) <= 0 ||
      m_chunksLeft.fetch_sub(1, std::memory_order_relaxed) <= 0)
    return false;
  // Not zeroed: a slot is read only once published. From the pool: huge
  // pages, and blocks of earlier logs reused (first touches are the cost).
  auto* chunk = static_cast<Chunk*>(HostBlockPool::instance().allocate());
  if (!chunk) return false;
  chunk->next = nullptr;
  if (b.tail) b.tail->next = chunk;  // published with the chunk's first event
  else b.head = chunk;
  b.tail = chunk;
  b.write = chunk->events;
  b.end = chunk->events + kChunkEvents;
  return true;
}

void EventLog::releaseBuffer(uint64_t thread_id) {
  std::lock_guard lock(m_buffersMutex);
  for (const auto& b : m_buffers)
    if (b->owner == thread_id) b->owner = 0;
}

size_t EventLog::bufferCount() const {
  std::lock_guard lock(m_buffersMutex);
  return m_buffers.size();
}

void EventLog::mergeLocked() const {
  {
    std::lock_guard lock(m_buffersMutex);
    for (size_t i = m_readBuffers.size(); i < m_buffers.size(); ++i) m_readBuffers.push_back(m_buffers[i].get());
  }
  for (Buffer* b : m_readBuffers) {
    const size_t n = b->published.load(std::memory_order_acquire);
    while (b->merged < n) {
      const size_t at = b->merged % kChunkEvents;
      // Step into the next chunk only once one of its events is published:
      // its link was written before that event's release.
      if (b->merged == 0) b->merge_chunk = b->head;
      else if (at == 0) b->merge_chunk = b->merge_chunk->next;
      const size_t take = std::min(n - b->merged, kChunkEvents - at);
      const Event* first = b->merge_chunk->events + at;
      Run* last = m_runs.empty() ? nullptr : &m_runs.back();
      if (last && last->first + last->count == first) last->count += take;  // same chunk, contiguous
      else m_runs.push_back(Run{m_merged, first, take});
      m_merged += take;
      b->merged += take;
    }
  }
}

size_t EventLog::publishedCount() const {
  std::lock_guard lock(m_readMutex);
  mergeLocked();
  return m_merged;
}

size_t EventLog::readFrom(size_t from, std::vector<Event>& out) const { return readFrom(from, out, SIZE_MAX); }

size_t EventLog::readFrom(size_t from, std::vector<Event>& out, size_t max_events) const {
  std::lock_guard lock(m_readMutex);
  mergeLocked();
  if (from >= m_merged || max_events == 0) return from;
  const size_t to = m_merged - from > max_events ? from + max_events : m_merged;
  out.reserve(out.size() + (to - from));
  auto run = std::upper_bound(m_runs.begin(), m_runs.end(), from, [](size_t i, const Run& r) { return i < r.start; }) - 1;
  for (size_t at = from; at < to; ++run) {
    const size_t skip = at - run->start;
    const size_t take = std::min(run->count - skip, to - at);
    out.insert(out.end(), run->first + skip, run->first + skip + take);
    at += take;
  }
  return to;
}

std::vector<Event> EventLog::snapshot() const {
  std::vector<Event> out;
  readFrom(0, out);
  return out;
}

}  // namespace shardscope

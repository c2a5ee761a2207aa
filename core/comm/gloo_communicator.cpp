// Ring collectives on Gloo point-to-point sends, not gloo::allreduce: Gloo has no
// bf16 and hides its sends, while ShardScope sums bf16 in fp32 and reports the
// bytes each rank really sent (counted at every send()). Segments move left -> me
// -> right, one slot each; bf16 partial sums travel as bf16, so each hop rounds
// (as NCCL does). Every rank must issue the same collectives in the same order.
#include "comm/gloo_communicator.h"

#include "comm/local_transport.h"
#include "comm/ring_chunks.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/log.h"
#include "common/thread_start.h"
#include "kernels/cpu_kernels.h"
#include "tensor/bf16.h"

namespace shardscope {
namespace {

using Millis = std::chrono::milliseconds;
using gloo::transport::UnboundBuffer;

// Receives posted ahead of the one being consumed (double buffering).
constexpr size_t kRecvDepth = 2;
// Rendezvous may take longer than a short collective timeout on a loaded machine.
constexpr Millis kMinConnectTimeout{30000};

using ring::chunkRange;
using ring::ElementRange;
using ring::reduceInto;
using ring::wrap;

size_t segmentCount(const ElementRange& r, size_t segElems) {
  return (r.length + segElems - 1) / segElems;
}

ElementRange segmentRange(const ElementRange& r, size_t segElems, size_t k) {
  const size_t begin = k * segElems;
  return {r.offset + begin, std::min(segElems, r.length - begin)};
}

// The point-to-point transfers of one collective call. Each transfer gets its own
// unbound buffer, so each wait matches exactly one operation. A call that ends
// with transfers still pending (an abort, an error) closes the group's
// connections before it returns: a pending receive would otherwise let Gloo's
// loop thread write a late segment into memory the caller frees as it unwinds
// (a task-local gather buffer, say). The group is unusable after either anyway.
class Transfers {
 public:
  Transfers(PointToPointLinks links, std::atomic<uint64_t>& bytesSent, Millis timeout, AbortState& abort)
      : m_links(links), m_bytesSent(bytesSent), m_timeout(timeout), m_abort(abort) {}
  void setTimeout(Millis timeout) { m_timeout = timeout; }
  ~Transfers() {
    bool pending = false;
    {
      std::lock_guard lock(m_abort.mutex);
      for (auto* list : {&m_sends, &m_recvs})
        for (auto& b : *list) {
          if (!b) continue;
          pending = true;
          m_abort.live.erase(b.get());
          // Gloo's loop thread may hold a reference to it right now: it goes
          // with the communicator, after the context.
          m_abort.graveyard.push_back(std::move(b));
        }
    }
    // Closing a pair takes the lock the loop thread holds while it reads into
    // a buffer and unregisters the socket from the loop: once this returns,
    // nothing more lands in the caller's memory.
    if (pending) closeConnectionsQuietly();
  }

  size_t send(const void* data, size_t bytes, int dst, uint64_t slot) {
    // Gloo's buffer type is read-write; a send only reads it.
    auto buf = m_links.buffer(const_cast<void*>(data), bytes);
    track(buf.get());
    // Owned by the list before Gloo can throw: a tracked buffer must never be
    // freed behind abort()'s back (the destructor untracks what is pending).
    UnboundBuffer* raw = m_sends.emplace_back(std::move(buf)).get();
    raw->send(dst, slot);
    m_bytesSent.fetch_add(bytes, std::memory_order_relaxed);
    return m_sends.size() - 1;
  }

  size_t recv(void* data, size_t bytes, int src, uint64_t slot) {
    auto buf = m_links.buffer(data, bytes);
    track(buf.get());
    UnboundBuffer* raw = m_recvs.emplace_back(std::move(buf)).get();  // owned first, as in send()
    raw->recv(src, slot);
    return m_recvs.size() - 1;
  }

  void waitRecv(size_t id) {
    if (!m_recvs[id]) return;
    if (!m_recvs[id]->waitRecv(m_timeout)) throw std::runtime_error("receive was aborted (run stopped)");
    untrack(m_recvs[id]);
  }

  void waitSend(size_t id) {
    if (!m_sends[id]) return;
    if (!m_sends[id]->waitSend(m_timeout)) throw std::runtime_error("send was aborted (run stopped)");
    untrack(m_sends[id]);
  }

  void waitAllSends() {
    for (size_t id = 0; id < m_sends.size(); ++id) waitSend(id);
  }

 private:
  // Registered buffers can be interrupted by abort(); registering checks the
  // flag under the same lock, so no buffer slips in after an abort.
  void track(UnboundBuffer* buf) {
    std::lock_guard lock(m_abort.mutex);
    if (m_abort.aborted) throw std::runtime_error("communicator aborted (run stopped)");
    m_abort.live.insert(buf);
  }
  void untrack(std::unique_ptr<UnboundBuffer>& buf) {
    std::lock_guard lock(m_abort.mutex);
    m_abort.live.erase(buf.get());
    buf.reset();
  }
  void closeConnectionsQuietly() noexcept {
    try {
      m_links.close();
    } catch (const std::exception& e) {  // a destructor: the close is best effort
      SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Comm), "closing a stopped group's connections: {}", e.what());
    }
  }

  PointToPointLinks m_links;
  std::atomic<uint64_t>& m_bytesSent;
  Millis m_timeout;
  AbortState& m_abort;
  std::vector<std::unique_ptr<UnboundBuffer>> m_sends;
  std::vector<std::unique_ptr<UnboundBuffer>> m_recvs;
};

// One segment a rank receives from its left neighbour at ring step `step`.
struct Unit {
  int step = 0;
  size_t seg = 0;
  ElementRange elems;        // elements covered, as offsets in the collective's buffer layout
  long reuseOf = -1;  // earlier unit whose forwarded send reads this unit's landing
                      // memory: that send must finish before this receive is posted
};

// Units of steps [0, steps), step j carrying chunk chunkOf(j), in receive order.
std::vector<Unit> buildUnits(int steps, const std::function<ElementRange(int)>& chunkOf, size_t segElems) {
  std::vector<Unit> units;
  for (int j = 0; j < steps; ++j) {
    const ElementRange chunk = chunkOf(j);
    for (size_t k = 0, n = segmentCount(chunk, segElems); k < n; ++k) {
      units.push_back({j, k, segmentRange(chunk, segElems, k), -1});
    }
  }
  return units;
}

// The shared skeleton of every ring collective: receive the units in order with
// kRecvDepth receives in flight; once unit i has landed, land(i) combines it and
// returns the bytes to forward to the right neighbour as (step + 1, seg), or null.
// Forwarding a segment as soon as it is ready pipelines the steps of the ring.
void runRing(Transfers& io, int left, int right, const std::vector<Unit>& units, size_t elemBytes,
             const std::function<uint64_t(int, size_t)>& slotOf,
             const std::function<void*(size_t)>& target,
             const std::function<const void*(size_t)>& land) {
  std::vector<size_t> recvIds(units.size());
  std::vector<long> forwardIds(units.size(), -1);
  auto post = [&](size_t i) {
    const Unit& u = units[i];
    if (u.reuseOf >= 0 && forwardIds[static_cast<size_t>(u.reuseOf)] >= 0) {
      io.waitSend(static_cast<size_t>(forwardIds[static_cast<size_t>(u.reuseOf)]));
    }
    recvIds[i] = io.recv(target(i), u.elems.length * elemBytes, left, slotOf(u.step, u.seg));
  };
  for (size_t i = 0; i < std::min(kRecvDepth, units.size()); ++i) post(i);
  for (size_t i = 0; i < units.size(); ++i) {
    const Unit& u = units[i];
    io.waitRecv(recvIds[i]);
    const void* forward = land(i);
    // Forward before posting the next receive: that receive may land where this
    // send reads (reuseOf), and post() can only wait for a send already issued.
    if (forward) {
      forwardIds[i] = static_cast<long>(
          io.send(forward, u.elems.length * elemBytes, right, slotOf(u.step + 1, u.seg)));
    }
    if (i + kRecvDepth < units.size()) post(i + kRecvDepth);
  }
  io.waitAllSends();
}

}  // namespace

std::unique_ptr<UnboundBuffer> PointToPointLinks::buffer(void* ptr, size_t bytes) const {
  return local ? local->createBuffer(rank, ptr, bytes) : context->createUnboundBuffer(ptr, bytes);
}

void PointToPointLinks::close() const {
  if (local) local->close(rank);
  else context->closeConnections();
}

GlooCommunicator::GlooCommunicator(std::shared_ptr<gloo::Context> context, int rank, int size,
                                   std::string prefix, std::chrono::milliseconds timeout)
    : m_context(std::move(context)),
      m_rank(rank),
      m_size(size),
      m_prefix(std::move(prefix)),
      m_timeout(timeout) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw ConfigError("GlooCommunicator: rank " + std::to_string(rank) + " is not in a group of " +
                      std::to_string(size));
  }
  if (size > 1 && !m_context) {
    throw ConfigError("GlooCommunicator: a group of " + std::to_string(size) +
                      " ranks needs a connected Gloo context");
  }
}

GlooCommunicator::GlooCommunicator(std::shared_ptr<LocalExchange> local, int rank, int size, std::string prefix,
                                   std::chrono::milliseconds timeout)
    : m_local(std::move(local)), m_rank(rank), m_size(size), m_prefix(std::move(prefix)), m_timeout(timeout) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw ConfigError("GlooCommunicator: rank " + std::to_string(rank) + " is not in a group of " +
                      std::to_string(size));
  }
  if (size > 1 && (!m_local || m_local->size() != size)) {
    throw ConfigError("GlooCommunicator: a group of " + std::to_string(size) +
                      " thread ranks needs their shared exchange");
  }
}

GlooCommunicator::~GlooCommunicator() {
  // Buffers of an aborted collective go after the context that may still be
  // completing them, and so do the messages of unfinished point-to-point transfers.
  m_context.reset();
  if (m_local) m_local->close(m_rank);  // its peers' transfers with it fail now, as a closed TCP pair's do
  m_abort.graveyard.clear();
  for (PendingSend& p : m_pendingSends) p.buffer.reset();
  m_pendingSends.clear();
  m_lateMessages.clear();
}

void GlooCommunicator::abort() {
  std::lock_guard lock(m_abort.mutex);
  m_abort.aborted = true;
  if (m_local) m_local->ringBoard().abort(m_rank);
  for (UnboundBuffer* buf : m_abort.live) {
    buf->abortWaitRecv();
    buf->abortWaitSend();
  }
}

template <typename Body>
void GlooCommunicator::guarded(const char* op, Body&& body) {
  try {
    body();
  } catch (const std::bad_alloc& e) {
    throw ResourceError(std::string("gloo ") + op + " on rank " + std::to_string(m_rank) + " in group '" + m_prefix +
                        "': " + failureText(e));
  } catch (const std::exception& e) {
    const std::string message =
        std::string("gloo ") + op + " failed on rank " + std::to_string(m_rank) + " of " + std::to_string(m_size) +
        " in group '" + m_prefix + "': " + e.what() + " (a peer stopped, or did not call the same collective within " +
        std::to_string(m_timeout.count()) + " ms; the group is unusable now)";
    bool aborted = false;
    {
      std::lock_guard lock(m_abort.mutex);
      aborted = m_abort.aborted;
    }
    // An aborted collective is an echo of the error that stopped the run.
    SPDLOG_LOGGER_CALL(&logger(LogComponent::Comm), aborted ? spdlog::level::debug : spdlog::level::err, "{}", message);
    throw RunError(message);
  }
}

std::vector<int> GlooCommunicator::exchangeUncounted(const void* mine, void* all, size_t bytes, Millis timeout) {
  char* out = static_cast<char*>(all);
  std::memcpy(out + static_cast<size_t>(m_rank) * bytes, mine, bytes);
  std::vector<int> missing;
  if (m_size == 1) return missing;
  const uint64_t slot = nextSlotBase();
  std::atomic<uint64_t> uncounted{0};
  Transfers io(links(), uncounted, timeout, m_abort);
  std::vector<size_t> recvs(static_cast<size_t>(m_size));
  for (int q = 0; q < m_size; ++q) {
    if (q == m_rank) continue;
    io.send(mine, bytes, q, slot);
    recvs[static_cast<size_t>(q)] = io.recv(out + static_cast<size_t>(q) * bytes, bytes, q, slot);
  }
  // One deadline for all: after the first peer times out Gloo fails the
  // context's pending operations at once, so the others are told apart by
  // whether their message had landed.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int q = 0; q < m_size; ++q) {
    if (q == m_rank) continue;
    const auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    io.setTimeout(std::max(Millis(1), left));
    try {
      io.waitRecv(recvs[static_cast<size_t>(q)]);
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(m_abort.mutex);
        if (m_abort.aborted) throw RunAborted();
      }
      SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Comm), "group '{}': no fingerprint from rank {}: {}", m_prefix, q,
                          e.what());
      missing.push_back(q);
    }
  }
  if (missing.empty()) {
    try {
      io.waitAllSends();
    } catch (const std::exception& e) {
      throw RunError("gloo fingerprint exchange in group '" + m_prefix + "': " + e.what());
    }
  }
  return missing;
}

uint64_t GlooCommunicator::p2pSlot(int from, int to, uint64_t index) const {
  // Above every collective's slots (nextSlotBase grows by 2^32 a call), one
  // range per direction of a pair: a send and its recv agree on the index.
  constexpr uint64_t kPointToPoint = uint64_t{0xFFFF} << 48;
  return kPointToPoint | (static_cast<uint64_t>(from < to ? 0 : 1) << 47) | (index & ((uint64_t{1} << 47) - 1));
}

void GlooCommunicator::send(const void* header, size_t header_bytes, const void* data, size_t bytes, int peer) {
  if (peer < 0 || peer >= m_size || peer == m_rank)
    throw RunError("gloo send: peer " + std::to_string(peer) + " is not another rank of group '" + m_prefix + "'");
  if (m_sentTo.empty()) m_sentTo.assign(static_cast<size_t>(m_size), 0);
  guarded("send", [&] {
    PendingSend pending;
    pending.message.reset(new char[header_bytes + bytes]);
    std::memcpy(pending.message.get(), header, header_bytes);
    if (bytes > 0) std::memcpy(pending.message.get() + header_bytes, data, bytes);
    pending.buffer = links().buffer(pending.message.get(), header_bytes + bytes);
    {
      std::lock_guard lock(m_abort.mutex);
      if (m_abort.aborted) throw std::runtime_error("communicator aborted (run stopped)");
      m_abort.live.insert(pending.buffer.get());
    }
    UnboundBuffer* raw = m_pendingSends.emplace_back(std::move(pending)).buffer.get();
    raw->send(peer, p2pSlot(m_rank, peer, m_sentTo[static_cast<size_t>(peer)]++));
    m_bytesSent.fetch_add(bytes, std::memory_order_relaxed);
  });
}

void GlooCommunicator::flushSends() {
  guarded("send", [&] {
    for (PendingSend& p : m_pendingSends) {
      if (!p.buffer->waitSend(m_timeout)) throw std::runtime_error("send was aborted (run stopped)");
      std::lock_guard lock(m_abort.mutex);
      m_abort.live.erase(p.buffer.get());
    }
    m_pendingSends.clear();
  });
}

bool GlooCommunicator::recv(void* header, size_t header_bytes, void* data, size_t bytes, int peer, Millis timeout) {
  if (peer < 0 || peer >= m_size || peer == m_rank)
    throw RunError("gloo recv: peer " + std::to_string(peer) + " is not another rank of group '" + m_prefix + "'");
  if (m_receivedFrom.empty()) m_receivedFrom.assign(static_cast<size_t>(m_size), 0);
  auto message = std::make_unique<char[]>(header_bytes + bytes);
  std::unique_ptr<UnboundBuffer> buffer;
  bool landed = false;
  // On every way out but a landed message (a timeout, an abort, an error),
  // Gloo's loop thread may still complete the receive: the buffer and its
  // memory go after the context, and abort() no longer sees it.
  const auto retire = [&] {
    std::lock_guard lock(m_abort.mutex);
    if (!buffer) return;
    m_abort.live.erase(buffer.get());
    if (landed) return;
    m_abort.graveyard.push_back(std::move(buffer));
    m_lateMessages.push_back(std::move(message));
  };
  try {
    guarded("recv", [&] {
      buffer = links().buffer(message.get(), header_bytes + bytes);
      {
        std::lock_guard lock(m_abort.mutex);
        if (m_abort.aborted) throw std::runtime_error("communicator aborted (run stopped)");
        m_abort.live.insert(buffer.get());
      }
      buffer->recv(peer, p2pSlot(peer, m_rank, m_receivedFrom[static_cast<size_t>(peer)]++));
      try {
        landed = buffer->waitRecv(timeout);
        if (!landed) throw std::runtime_error("receive was aborted (run stopped)");
      } catch (const gloo::IoException&) {
        landed = false;  // timed out: the caller names who never sent (the context is closed now)
      }
    });
  } catch (...) {
    retire();
    throw;
  }
  retire();
  if (!landed) return false;
  std::memcpy(header, message.get(), header_bytes);
  if (bytes > 0) std::memcpy(data, message.get() + header_bytes, bytes);
  return true;
}

void GlooCommunicator::setSegmentBytes(size_t bytes) {
  if (bytes < 64) throw std::invalid_argument("segment bytes = " + std::to_string(bytes) + " must be at least 64");
  m_segmentBytes = bytes;
}

uint64_t GlooCommunicator::nextSlotBase() {
  // 2^32 slots per call: (steps x segments per chunk) stays far below that.
  return ++m_calls << 32;
}

char* GlooCommunicator::scratch(size_t bytes) {
  if (bytes > m_scratchBytes) {
    m_scratch.reset(new char[bytes]);  // left uninitialised: always written before read
    m_scratchBytes = bytes;
  }
  return m_scratch.get();
}

void GlooCommunicator::allReduce(void* data, size_t count, DType dtype) {
  if (m_size == 1 || count == 0) return;
  guarded("allReduce", [&] {
    if (m_local) localAllReduce(static_cast<char*>(data), count, dtype);
    else ringAllReduce(static_cast<char*>(data), count, dtype);
  });
}

void GlooCommunicator::reduceScatter(const void* input, void* output, size_t count, DType dtype) {
  if (count == 0) return;
  if (m_size == 1) {
    if (input != output) std::memmove(output, input, count * dtypeSize(dtype));
    return;
  }
  guarded("reduceScatter", [&] {
    if (m_local) localReduceScatter(static_cast<const char*>(input), static_cast<char*>(output), count, dtype);
    else ringReduceScatter(static_cast<const char*>(input), static_cast<char*>(output), count, dtype);
  });
}

void GlooCommunicator::allGather(const void* input, void* output, size_t count, DType dtype) {
  if (count == 0) return;
  if (m_size == 1) {
    if (input != output) std::memmove(output, input, count * dtypeSize(dtype));
    return;
  }
  guarded("allGather", [&] {
    if (m_local) localAllGather(static_cast<const char*>(input), static_cast<char*>(output), count, dtype);
    else ringAllGather(static_cast<const char*>(input), static_cast<char*>(output), count, dtype);
  });
}

void GlooCommunicator::broadcast(void* data, size_t count, DType dtype, int root) {
  if (root < 0 || root >= m_size) {
    throw ConfigError("gloo broadcast: root " + std::to_string(root) + " is not a rank of group '" +
                      m_prefix + "' (size " + std::to_string(m_size) + ")");
  }
  if (m_size == 1 || count == 0) return;
  guarded("broadcast", [&] { chainBroadcast(static_cast<char*>(data), count, dtype, root); });
}

void GlooCommunicator::barrier() {
  if (m_size == 1) return;
  // A one-element all-reduce: the sum reaches every rank only after every rank
  // has contributed, which is exactly a barrier.
  float one = 1.0f;
  allReduce(&one, 1, DType::F32);
  if (one != static_cast<float>(m_size)) {
    throw RunError("gloo barrier on rank " + std::to_string(m_rank) + " of group '" + m_prefix +
                   "' counted " + std::to_string(one) + " ranks, expected " +
                   std::to_string(m_size));
  }
}

// Reduce-scatter then all-gather, as one ring of 2(P-1) steps on P chunks. At
// step j a rank receives chunk (rank - j - 1) and sends chunk (rank - j), which
// it received at step j - 1: summed in during the first P - 1 steps (after which
// it owns the full sum of chunk rank + 1), copied in place during the rest.
// Chunks are distinct regions, so a chunk being sent is never being written.
void GlooCommunicator::ringAllReduce(char* data, size_t count, DType dtype) {
  const int P = m_size;
  const int r = m_rank;
  const size_t e = dtypeSize(dtype);
  const size_t segElems = std::max<size_t>(1, m_segmentBytes / e);
  const int steps = 2 * (P - 1);
  const uint64_t base = nextSlotBase();
  const uint64_t maxSegs = segmentCount(chunkRange(count, P, 0), segElems);
  auto slotOf = [&](int step, size_t seg) {
    return base + static_cast<uint64_t>(step) * maxSegs + seg;
  };
  auto chunkOf = [&](int step) { return chunkRange(count, P, wrap(r - step - 1, P)); };
  const std::vector<Unit> units = buildUnits(steps, chunkOf, segElems);

  char* landing = scratch(kRecvDepth * segElems * e);
  Transfers io(links(), m_bytesSent, m_timeout, m_abort);
  const ElementRange own = chunkRange(count, P, r);
  for (size_t k = 0, n = segmentCount(own, segElems); k < n; ++k) {
    const ElementRange s = segmentRange(own, segElems, k);
    io.send(data + s.offset * e, s.length * e, wrap(r + 1, P), slotOf(0, k));
  }
  auto target = [&](size_t i) -> void* {
    const Unit& u = units[i];
    if (u.step < P - 1) return landing + (i % kRecvDepth) * segElems * e;
    return data + u.elems.offset * e;
  };
  auto land = [&](size_t i) -> const void* {
    const Unit& u = units[i];
    char* mine = data + u.elems.offset * e;
    if (u.step < P - 1) {
      reduceInto(mine, landing + (i % kRecvDepth) * segElems * e, u.elems.length, dtype);
    }
    return u.step + 1 < steps ? mine : nullptr;
  };
  runRing(io, wrap(r - 1, P), wrap(r + 1, P), units, e, slotOf, target, land);
}

// P - 1 steps; at step j a rank receives the partial sum of chunk (rank - j - 2)
// and adds its own input chunk. The last step lands chunk `rank` straight in
// output. Partial sums live in two chunk-sized work buffers by step parity; a
// segment is overwritten only after its previous forward send completed.
void GlooCommunicator::ringReduceScatter(const char* input, char* output, size_t count,
                                         DType dtype) {
  const int P = m_size;
  const int r = m_rank;
  const size_t e = dtypeSize(dtype);
  const size_t segElems = std::max<size_t>(1, m_segmentBytes / e);
  const int steps = P - 1;
  const uint64_t base = nextSlotBase();
  const ElementRange chunk{0, count};  // every chunk has `count` elements; units use chunk coordinates
  const size_t segs = segmentCount(chunk, segElems);
  auto slotOf = [&](int step, size_t seg) {
    return base + static_cast<uint64_t>(step) * segs + seg;
  };
  std::vector<Unit> units = buildUnits(steps, [&](int) { return chunk; }, segElems);
  for (size_t i = 2 * segs; i < units.size(); ++i) {
    if (units[i].step + 1 < steps) units[i].reuseOf = static_cast<long>(i - 2 * segs);
  }
  auto chunkIndex = [&](int step) { return static_cast<size_t>(wrap(r - step - 2, P)); };

  // In place (output inside input): the last step must not land on our own input
  // chunk before it is added, so it lands in a staging copy.
  const auto in = reinterpret_cast<uintptr_t>(input);
  const auto outp = reinterpret_cast<uintptr_t>(output);
  const bool aliased = outp < in + static_cast<size_t>(P) * count * e && in < outp + count * e;
  const size_t workBytes = static_cast<size_t>(std::min(2, P - 2)) * count * e;
  char* work = scratch(workBytes + (aliased ? count * e : 0));
  char* out = aliased ? work + workBytes : output;
  Transfers io(links(), m_bytesSent, m_timeout, m_abort);
  const char* first = input + static_cast<size_t>(wrap(r - 1, P)) * count * e;
  for (size_t k = 0; k < segs; ++k) {
    const ElementRange s = segmentRange(chunk, segElems, k);
    io.send(first + s.offset * e, s.length * e, wrap(r + 1, P), slotOf(0, k));
  }
  auto target = [&](size_t i) -> char* {
    const Unit& u = units[i];
    if (u.step == steps - 1) return out + u.elems.offset * e;
    return work + (static_cast<size_t>(u.step % 2) * count + u.elems.offset) * e;
  };
  auto land = [&](size_t i) -> const void* {
    const Unit& u = units[i];
    char* sum = target(i);
    const char* own = input + (chunkIndex(u.step) * count + u.elems.offset) * e;
    reduceInto(sum, own, u.elems.length, dtype);
    return u.step + 1 < steps ? sum : nullptr;
  };
  runRing(io, wrap(r - 1, P), wrap(r + 1, P), units, e, slotOf, target, land);
  if (aliased) std::memcpy(output, out, count * e);
}

// P - 1 steps; at step j a rank receives chunk (rank - j - 1) into output and
// forwards it at step j + 1. Its own chunk goes out from input at step 0.
void GlooCommunicator::ringAllGather(const char* input, char* output, size_t count, DType dtype) {
  const int P = m_size;
  const int r = m_rank;
  const size_t e = dtypeSize(dtype);
  const size_t segElems = std::max<size_t>(1, m_segmentBytes / e);
  const int steps = P - 1;
  const uint64_t base = nextSlotBase();
  const size_t segs = segmentCount({0, count}, segElems);
  auto slotOf = [&](int step, size_t seg) {
    return base + static_cast<uint64_t>(step) * segs + seg;
  };
  auto chunkOf = [&](int step) {
    return ElementRange{static_cast<size_t>(wrap(r - step - 1, P)) * count, count};
  };
  const std::vector<Unit> units = buildUnits(steps, chunkOf, segElems);

  Transfers io(links(), m_bytesSent, m_timeout, m_abort);
  for (size_t k = 0; k < segs; ++k) {
    const ElementRange s = segmentRange({0, count}, segElems, k);
    io.send(input + s.offset * e, s.length * e, wrap(r + 1, P), slotOf(0, k));
  }
  char* mine = output + static_cast<size_t>(r) * count * e;
  if (mine != input) std::memmove(mine, input, count * e);
  auto target = [&](size_t i) -> void* { return output + units[i].elems.offset * e; };
  auto land = [&](size_t i) -> const void* {
    return units[i].step + 1 < steps ? output + units[i].elems.offset * e : nullptr;
  };
  runRing(io, wrap(r - 1, P), wrap(r + 1, P), units, e, slotOf, target, land);
}

// A pipelined chain root -> root+1 -> ... -> root-1: hop h leaves the rank h
// places after root. Every rank but the last sends the whole buffer once.
void GlooCommunicator::chainBroadcast(char* data, size_t count, DType dtype, int root) {
  const int P = m_size;
  const int pos = wrap(m_rank - root, P);
  const size_t e = dtypeSize(dtype);
  const size_t segElems = std::max<size_t>(1, m_segmentBytes / e);
  const uint64_t base = nextSlotBase();
  const ElementRange all{0, count};
  const size_t segs = segmentCount(all, segElems);
  auto slotOf = [&](int hop, size_t seg) { return base + static_cast<uint64_t>(hop) * segs + seg; };
  const int right = wrap(m_rank + 1, P);

  Transfers io(links(), m_bytesSent, m_timeout, m_abort);
  if (pos == 0) {
    for (size_t k = 0; k < segs; ++k) {
      const ElementRange s = segmentRange(all, segElems, k);
      io.send(data + s.offset * e, s.length * e, right, slotOf(0, k));
    }
    io.waitAllSends();
    return;
  }
  std::vector<Unit> units = buildUnits(1, [&](int) { return all; }, segElems);
  for (Unit& u : units) u.step = pos - 1;  // the hop that reaches this rank
  auto target = [&](size_t i) -> void* { return data + units[i].elems.offset * e; };
  auto land = [&](size_t i) -> const void* {
    return pos + 1 < P ? data + units[i].elems.offset * e : nullptr;
  };
  runRing(io, wrap(m_rank - 1, P), right, units, e, slotOf, target, land);
}

namespace {

// Gloo's TCP pairs write with writev, and a write to a peer that already
// closed (a cancelled or dead rank) raises SIGPIPE, whose default ends the
// whole process (core_test_cancel_storm died of it once in a hundred
// cancels). Ignored, the write fails with EPIPE and Gloo throws, which the
// run reports like any other broken link. Python ignores SIGPIPE at start,
// which is why PyTorch's Gloo never meets it.
std::shared_ptr<gloo::transport::Device> createTcpDevice(const gloo::transport::tcp::attr& attr) {
  static std::once_flag once;
  std::call_once(once, [] { std::signal(SIGPIPE, SIG_IGN); });
  return gloo::transport::tcp::CreateDevice(attr);
}

}  // namespace

ThreadTransport threadTransport() {
  const char* v = std::getenv("SHARDSCOPE_THREAD_TRANSPORT");
  const std::string value = v ? v : "";
  if (value.empty() || value == "shm") return ThreadTransport::SharedMemory;
  if (value == "tcp") return ThreadTransport::TcpLoopback;
  throw ConfigError("SHARDSCOPE_THREAD_TRANSPORT='" + value +
                    "': use shm (thread ranks copy through shared memory, the default) or tcp (Gloo over TCP loopback)");
}

std::unique_ptr<GlooCommunicator> connectGlooMember(int size, int rank, const std::string& prefix,
                                                    gloo::rendezvous::Store& store, const std::string& hostname,
                                                    int timeout_ms, int connect_timeout_ms) {
  const Millis timeout{timeout_ms};
  if (size == 1) return std::make_unique<GlooCommunicator>(std::shared_ptr<gloo::Context>{}, 0, 1, prefix, timeout);
  const auto connect_start = std::chrono::steady_clock::now();
  std::shared_ptr<gloo::transport::Device> device;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname;
    device = createTcpDevice(attr);
  } catch (const std::exception& e) {
    throw RunError("rank " + std::to_string(rank) + " of group '" + prefix + "' could not listen on " + hostname +
                   ": " + failureText(e));
  }
  gloo::rendezvous::PrefixStore scoped(prefix, store);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  try {
    context->setTimeout(Millis(connect_timeout_ms));
    context->connectFullMesh(scoped, device);
    context->setTimeout(timeout);
  } catch (const std::exception& e) {
    throw RunError("rank " + std::to_string(rank) + " could not connect to the " + std::to_string(size - 1) +
                   " other ranks of group '" + prefix + "' within " + std::to_string(connect_timeout_ms) +
                   " ms (a rank never started, or the rendezvous store is not shared): " + e.what());
  }
  SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Comm), "gloo rendezvous of group '{}': rank {} of {} connected in {:.1f} ms",
                      prefix, rank, size,
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - connect_start).count());
  return std::make_unique<GlooCommunicator>(std::move(context), rank, size, prefix, timeout);
}

std::vector<std::unique_ptr<Communicator>> createGlooGroup(int size, const std::string& prefix,
                                                           int timeout_ms) {
  if (size < 1) {
    throw ConfigError("createGlooGroup('" + prefix + "'): size " + std::to_string(size) +
                      " must be at least 1");
  }
  if (timeout_ms <= 0) {
    throw ConfigError("createGlooGroup('" + prefix + "'): timeout_ms " +
                      std::to_string(timeout_ms) + " must be positive");
  }
  const Millis timeout{timeout_ms};
  std::vector<std::unique_ptr<Communicator>> group;
  if (size == 1) {
    group.push_back(std::make_unique<GlooCommunicator>(std::shared_ptr<gloo::Context>{}, 0, 1, prefix, timeout));
    return group;
  }
  // Ranks that are threads of this process share memory: the rings copy
  // straight between their buffers (local_transport.h).
  if (threadTransport() == ThreadTransport::SharedMemory) {
    auto exchange = std::make_shared<LocalExchange>(size);
    for (int r = 0; r < size; ++r)
      group.push_back(std::make_unique<GlooCommunicator>(exchange, r, size, prefix, timeout));
    SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Comm), "gloo group '{}': {} thread ranks through shared memory", prefix,
                        size);
    return group;
  }

  // A fresh store per group: it is only read during rendezvous, and a reused
  // prefix then never sees a dead group's addresses. The prefix names the keys.
  const auto connect_start = std::chrono::steady_clock::now();
  gloo::rendezvous::HashStore hashStore;
  gloo::rendezvous::PrefixStore store(prefix, hashStore);
  std::vector<std::shared_ptr<gloo::Context>> contexts(static_cast<size_t>(size));
  std::vector<std::string> errors(static_cast<size_t>(size)), device_errors(static_cast<size_t>(size));
  {
    // connectFullMesh blocks until every rank has connected: one thread per
    // rank. A rank that never publishes its address would keep the others
    // waiting out the connect timeout, so no rank connects before every
    // thread has started and made its device (each device starts a thread
    // too): the first failure lets them all return at once.
    std::mutex mutex;
    std::condition_variable cv;
    int devices_made = 0;
    bool give_up = false;
    const auto ready = [&](bool ok) {
      std::unique_lock lock(mutex);
      give_up |= !ok;
      ++devices_made;
      cv.notify_all();
      cv.wait(lock, [&] { return give_up || devices_made == size; });
      return !give_up;
    };
    JoinedThreads threads;
    std::string start_error;
    for (int r = 0; r < size && start_error.empty(); ++r) {
      try {
        threads.start("the rendezvous of group '" + prefix + "'", [&, r] {
          std::shared_ptr<gloo::transport::Device> device;
          try {
            gloo::transport::tcp::attr attr;
            attr.hostname = "127.0.0.1";
            device = createTcpDevice(attr);
          } catch (const std::exception& e) {
            device_errors[static_cast<size_t>(r)] = failureText(e);
          }
          if (!ready(device != nullptr)) return;
          try {
            auto context = std::make_shared<gloo::rendezvous::Context>(r, size);
            context->setTimeout(std::max(timeout, kMinConnectTimeout));
            context->connectFullMesh(store, device);
            context->setTimeout(timeout);
            contexts[static_cast<size_t>(r)] = std::move(context);
          } catch (const std::exception& e) {
            errors[static_cast<size_t>(r)] = e.what();
          }
        });
      } catch (const ResourceError& e) {
        start_error = e.what();
        std::lock_guard lock(mutex);
        give_up = true;
        cv.notify_all();
      }
    }
    threads.joinAll();
    if (!start_error.empty()) throw ResourceError(start_error);
    for (int r = 0; r < size; ++r)
      if (!device_errors[static_cast<size_t>(r)].empty())
        throw ResourceError("rank " + std::to_string(r) + " of group '" + prefix +
                            "' could not make its TCP transport: " + device_errors[static_cast<size_t>(r)] +
                            " (the process is at its thread or memory limit, see ulimit -u and ulimit -v): try "
                            "fewer --ranks");
  }
  for (int r = 0; r < size; ++r) {
    if (!errors[static_cast<size_t>(r)].empty()) {
      SPDLOG_LOGGER_ERROR(&logger(LogComponent::Comm), "gloo rendezvous of group '{}' ({} ranks): rank {} could not connect: {}",
                          prefix, size, r, errors[static_cast<size_t>(r)]);
      throw std::runtime_error("createGlooGroup('" + prefix + "', size " + std::to_string(size) +
                               "): rank " + std::to_string(r) +
                               " could not connect over TCP loopback: " +
                               errors[static_cast<size_t>(r)]);
    }
  }
  SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Comm),
                      "gloo rendezvous of group '{}': {} ranks, {} pairs over TCP loopback in {:.1f} ms", prefix, size,
                      size * (size - 1) / 2,
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - connect_start).count());
  for (int r = 0; r < size; ++r) {
    group.push_back(std::make_unique<GlooCommunicator>(std::move(contexts[static_cast<size_t>(r)]),
                                                       r, size, prefix, timeout));
  }
  return group;
}

}  // namespace shardscope

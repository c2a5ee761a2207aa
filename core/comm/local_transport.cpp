#include "comm/local_transport.h"

#include <gloo/common/error.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace shardscope {

// One buffer of one rank. Its waits use the exchange's mutex (every state
// change happens under it) and its own condition variable, so a finished
// copy wakes only the two ranks it concerns.
class LocalBuffer final : public gloo::transport::UnboundBuffer {
 public:
  LocalBuffer(std::shared_ptr<LocalExchange> exchange, int rank, void* p, size_t bytes)
      : UnboundBuffer(p, bytes), m_exchange(std::move(exchange)), m_rank(rank) {}

  ~LocalBuffer() override {
    std::unique_lock lock(m_exchange->m_mutex);
    m_exchange->withdraw(this);
    m_cv.wait(lock, [&] { return m_copies == 0; });
  }

  bool waitRecv(int* rank, std::chrono::milliseconds timeout) override { return wait(false, rank, timeout); }
  bool waitSend(int* rank, std::chrono::milliseconds timeout) override { return wait(true, rank, timeout); }

  void abortWaitRecv() override { abortWait(false); }
  void abortWaitSend() override { abortWait(true); }

  void send(int dst, uint64_t slot, size_t offset, size_t nbytes) override { transfer(true, dst, slot, offset, nbytes); }
  void recv(int src, uint64_t slot, size_t offset, size_t nbytes) override { transfer(false, src, slot, offset, nbytes); }
  void recv(std::vector<int>, uint64_t, size_t, size_t) override {
    throw gloo::IoException("a receive from any of several ranks is not offered between ranks of one process");
  }

 private:
  friend class LocalExchange;

  void transfer(bool is_send, int peer, uint64_t slot, size_t offset, size_t nbytes) {
    if (nbytes == kUnspecifiedByteCount) nbytes = offset <= size ? size - offset : 0;
    if (offset > size || nbytes > size - offset)
      throw gloo::IoException("a transfer of " + std::to_string(nbytes) + " bytes at offset " + std::to_string(offset) +
                              " does not fit a buffer of " + std::to_string(size));
    const LocalExchange::Key key = is_send ? LocalExchange::Key{m_rank, peer, slot} : LocalExchange::Key{peer, m_rank, slot};
    m_exchange->post(is_send, key, {this, offset, nbytes});
  }

  bool wait(bool send, int* rank, std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_exchange->m_mutex);
    uint64_t& done = send ? m_sendsDone : m_recvsDone;
    uint64_t& waited = send ? m_sendsWaited : m_recvsWaited;
    bool& aborted = send ? m_abortSend : m_abortRecv;
    const auto ready = [&] { return done > waited || aborted || !m_error.empty(); };
    if (timeout == gloo::transport::kUnsetTimeout) {
      m_cv.wait(lock, ready);
    } else if (!m_cv.wait_for(lock, timeout, ready)) {
      throw gloo::IoException("Timed out waiting " + std::to_string(timeout.count()) + "ms for " +
                              (send ? "send" : "recv") + " operation to complete");
    }
    if (aborted) {
      aborted = false;
      return false;
    }
    if (done <= waited) throw gloo::IoException(m_error);
    ++waited;
    if (rank) *rank = send ? m_lastDst : m_lastSrc;
    return true;
  }

  void abortWait(bool send) {
    std::lock_guard lock(m_exchange->m_mutex);
    (send ? m_abortSend : m_abortRecv) = true;
    m_cv.notify_all();
  }

  void unposted(bool is_send, const LocalExchange::Key& key) {
    const auto it = std::find(m_posted.begin(), m_posted.end(), std::make_pair(is_send, key));
    if (it != m_posted.end()) m_posted.erase(it);
  }

  std::shared_ptr<LocalExchange> m_exchange;
  const int m_rank;
  std::condition_variable m_cv;
  uint64_t m_sendsDone = 0, m_sendsWaited = 0, m_recvsDone = 0, m_recvsWaited = 0;
  bool m_abortSend = false, m_abortRecv = false;
  int m_copies = 0;  // copies in flight into or out of this buffer's memory
  int m_lastSrc = -1, m_lastDst = -1;
  std::string m_error;  // why its transfer failed (a peer closed, sizes differ)
  std::vector<std::pair<bool, LocalExchange::Key>> m_posted;  // (is send, key) posted and not yet matched
};

LocalExchange::LocalExchange(int size)
    : m_size(size), m_copying(static_cast<size_t>(std::max(size, 0)), 0),
      m_closed(static_cast<size_t>(std::max(size, 0)), false), m_ringBoard(std::max(size, 0)) {}

std::unique_ptr<gloo::transport::UnboundBuffer> LocalExchange::createBuffer(int rank, void* ptr, size_t bytes) {
  return std::make_unique<LocalBuffer>(shared_from_this(), rank, ptr, bytes);
}

void LocalExchange::post(bool is_send, const Key& key, const Posting& mine) {
  std::unique_lock lock(m_mutex);
  const int peer = is_send ? key.dst : key.src;
  if (peer < 0 || peer >= m_size)
    throw gloo::IoException("rank " + std::to_string(peer) + " is not in this group of " + std::to_string(m_size));
  for (const int r : {key.src, key.dst})
    if (m_closed[static_cast<size_t>(r)])
      throw gloo::IoException("rank " + std::to_string(r) + " closed its connections (the group stopped)");
  auto& others = is_send ? m_recvs : m_sends;
  const auto it = others.find(key);
  if (it == others.end()) {
    if (!(is_send ? m_sends : m_recvs).emplace(key, mine).second)
      throw gloo::IoException("slot " + std::to_string(key.slot) + " between ranks " + std::to_string(key.src) +
                              " and " + std::to_string(key.dst) + " is already in use");
    mine.buffer->m_posted.emplace_back(is_send, key);
    return;
  }
  const Posting other = it->second;
  others.erase(it);
  other.buffer->unposted(!is_send, key);
  const Posting& src = is_send ? mine : other;
  const Posting& dst = is_send ? other : mine;
  if (src.bytes != dst.bytes) {
    const std::string why = "rank " + std::to_string(key.src) + " sent " + std::to_string(src.bytes) +
                            " bytes where rank " + std::to_string(key.dst) + " expected " + std::to_string(dst.bytes);
    fail(other, why);
    throw gloo::IoException(why);
  }
  ++src.buffer->m_copies;
  ++dst.buffer->m_copies;
  ++m_copying[static_cast<size_t>(key.src)];
  ++m_copying[static_cast<size_t>(key.dst)];
  lock.unlock();
  // Outside the lock: the group's other copies run at the same time. Neither
  // buffer can go meanwhile (its destructor waits for m_copies == 0).
  if (src.bytes > 0)
    std::memcpy(static_cast<char*>(dst.buffer->ptr) + dst.offset, static_cast<const char*>(src.buffer->ptr) + src.offset,
                src.bytes);
  lock.lock();
  --src.buffer->m_copies;
  --dst.buffer->m_copies;
  --m_copying[static_cast<size_t>(key.src)];
  --m_copying[static_cast<size_t>(key.dst)];
  ++src.buffer->m_sendsDone;
  src.buffer->m_lastDst = key.dst;
  ++dst.buffer->m_recvsDone;
  dst.buffer->m_lastSrc = key.src;
  src.buffer->m_cv.notify_all();
  dst.buffer->m_cv.notify_all();
  m_copied.notify_all();
}

void LocalExchange::fail(const Posting& p, const std::string& why) {
  p.buffer->m_error = why;
  p.buffer->m_cv.notify_all();
}

void LocalExchange::withdraw(LocalBuffer* buffer) {
  for (const auto& [is_send, key] : buffer->m_posted) {
    auto& map = is_send ? m_sends : m_recvs;
    const auto it = map.find(key);
    if (it != map.end() && it->second.buffer == buffer) map.erase(it);
  }
  buffer->m_posted.clear();
}

void LocalExchange::close(int rank) {
  if (rank < 0 || rank >= m_size) return;
  m_ringBoard.close(rank);
  std::unique_lock lock(m_mutex);
  m_closed[static_cast<size_t>(rank)] = true;
  const std::string why = "rank " + std::to_string(rank) + " closed its connections (the group stopped)";
  for (const bool is_send : {true, false}) {
    auto& map = is_send ? m_sends : m_recvs;
    for (auto it = map.begin(); it != map.end();) {
      if (it->first.src != rank && it->first.dst != rank) {
        ++it;
        continue;
      }
      it->second.buffer->unposted(is_send, it->first);
      fail(it->second, why);
      it = map.erase(it);
    }
  }
  m_copied.wait(lock, [&] { return m_copying[static_cast<size_t>(rank)] == 0; });
}

}  // namespace shardscope

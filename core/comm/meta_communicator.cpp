#include "comm/meta_communicator.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "common/collective.h"

namespace shardscope {

namespace {

// A meta group's point-to-point envelopes, shared by its members: one queue
// per (sender, receiver) pair. Payloads are never moved (meta buffers hold no
// bytes); the envelope carries what the receiver checks and when the send left.
class MetaMailbox {
 public:
  explicit MetaMailbox(int size) : m_ready(static_cast<size_t>(size)) {}
  void post(int from, int to, const void* header, size_t bytes) {
    const auto* p = static_cast<const char*>(header);
    {
      std::lock_guard lock(m_mutex);
      m_queues[{from, to}].emplace_back(p, p + bytes);
    }
    m_ready[static_cast<size_t>(to)].notify_all();  // only the receiver's waits (a pipeline of 64 stages)
  }
  bool take(int from, int to, void* header, size_t bytes, std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_mutex);
    auto& queue = m_queues[{from, to}];
    if (!m_ready[static_cast<size_t>(to)].wait_for(lock, timeout, [&] { return m_aborted || !queue.empty(); }))
      return false;
    if (m_aborted) throw RunError("meta point-to-point receive aborted (run stopped)");
    std::memcpy(header, queue.front().data(), std::min(bytes, queue.front().size()));
    queue.pop_front();
    return true;
  }
  void abort() {
    {
      std::lock_guard lock(m_mutex);
      m_aborted = true;
    }
    for (auto& ready : m_ready) ready.notify_all();
  }

 private:
  std::mutex m_mutex;
  std::vector<std::condition_variable> m_ready;  // per receiver
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> m_queues;
  bool m_aborted = false;
};

class MetaCommunicator final : public Communicator {
 public:
  MetaCommunicator(int rank, int size, std::shared_ptr<MetaMailbox> mailbox)
      : m_rank(rank), m_size(size), m_mailbox(std::move(mailbox)) {}
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  std::string backendName() const override { return "meta"; }

  // Bytes from the ring formulas (common/collective.h), as Gloo sends them.
  void allReduce(void*, size_t count, DType dtype) override { add(Collective::AllReduce, count, dtype); }
  void reduceScatter(const void*, void*, size_t count, DType dtype) override {
    add(Collective::ReduceScatter, count, dtype);
  }
  void allGather(const void*, void*, size_t count, DType dtype) override { add(Collective::AllGather, count, dtype); }
  void broadcast(void*, size_t count, DType dtype, int root) override { add(Collective::Broadcast, count, dtype, root); }
  void barrier() override {}
  uint64_t bytesSent() const override { return m_sent.load(); }
  void send(const void* header, size_t header_bytes, const void*, size_t bytes, int peer) override {
    m_mailbox->post(m_rank, peer, header, header_bytes);
    m_sent += bytes;
  }
  bool recv(void* header, size_t header_bytes, void*, size_t, int peer, std::chrono::milliseconds timeout) override {
    return m_mailbox->take(peer, m_rank, header, header_bytes, timeout);
  }
  void abort() override { m_mailbox->abort(); }

 private:
  void add(Collective c, size_t count, DType dtype, int root = 0) {
    m_sent += ringBytesSent(c, m_rank, m_size, count, dtypeSize(dtype), root);
  }
  int m_rank, m_size;
  std::shared_ptr<MetaMailbox> m_mailbox;
  std::atomic<uint64_t> m_sent{0};
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> createMetaGroup(int size) {
  std::vector<std::unique_ptr<Communicator>> group;
  auto mailbox = std::make_shared<MetaMailbox>(size);
  for (int r = 0; r < size; ++r) group.push_back(std::make_unique<MetaCommunicator>(r, size, mailbox));
  return group;
}

}  // namespace shardscope

// What ranks that are threads of one process share instead of TCP loopback.
// The ring collectives (all-reduce, reduce-scatter, all-gather) run straight
// on each other's memory through the ring board (local_ring_board.h). The
// rest (broadcast's chain, pipeline send/recv, the fingerprint exchange) goes
// through Gloo's UnboundBuffer interface over a mailbox: of a matching send
// and receive, the second to arrive copies the bytes once, from the sender's
// memory straight into the receiver's (one copy per hop).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/local_ring_board.h"

namespace gloo::transport {
class UnboundBuffer;
}

namespace shardscope {

class LocalBuffer;

class LocalExchange : public std::enable_shared_from_this<LocalExchange> {
 public:
  explicit LocalExchange(int size);
  int size() const { return m_size; }

  // A buffer of group rank `rank` over ptr(bytes); the caller keeps the memory
  // alive until the buffer is destroyed (which withdraws what it posted).
  std::unique_ptr<gloo::transport::UnboundBuffer> createBuffer(int rank, void* ptr, size_t bytes);

  // Ends `rank`'s membership, as closing a TCP context's pairs does: its
  // unmatched transfers and every peer's transfer to or from it fail, later
  // ones are refused, and it returns once no copy touches its memory.
  void close(int rank);

  // Where the group's ring collectives run straight on the members' memory.
  LocalRingBoard& ringBoard() { return m_ringBoard; }

 private:
  friend class LocalBuffer;
  struct Key {
    int src = 0, dst = 0;
    uint64_t slot = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.slot * 1000003u + static_cast<uint64_t>(k.src) * 4099u + static_cast<uint64_t>(k.dst));
    }
  };
  struct Posting {
    LocalBuffer* buffer = nullptr;
    size_t offset = 0, bytes = 0;
  };

  void post(bool is_send, const Key& key, const Posting& mine);
  void withdraw(LocalBuffer* buffer);  // the buffer's postings; waits for its copies (lock held by caller)
  void fail(const Posting& p, const std::string& why);  // its wait throws `why`

  const int m_size;
  std::mutex m_mutex;
  std::unordered_map<Key, Posting, KeyHash> m_sends, m_recvs;  // posted, not yet matched
  std::vector<int> m_copying;  // copies in flight touching each rank's memory
  std::vector<bool> m_closed;
  std::condition_variable m_copied;  // a copy finished (close waits on it)
  LocalRingBoard m_ringBoard;
};

}  // namespace shardscope

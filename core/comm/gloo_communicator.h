// Gloo backend of Communicator: ranks that are threads of one process run the
// same rings on each other's memory (local_transport.h); ranks in other
// processes or machines are linked by Gloo's TCP transport. Collectives are rings built on Gloo point-to-point
// sends (not Gloo's own algorithms) so that every byte put on the wire is counted
// at the send and bf16 can be summed in fp32. After a collective throws, the group
// is unusable: peers may be mid-collective with messages in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "comm/communicator.h"

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}
namespace transport {
class UnboundBuffer;
}
}  // namespace gloo

namespace shardscope {

class LocalExchange;

// Where a member's point-to-point buffers come from: Gloo's TCP context, or the
// mailbox of ranks that are threads of one process.
struct PointToPointLinks {
  gloo::Context* context = nullptr;
  LocalExchange* local = nullptr;
  int rank = 0;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer(void* ptr, size_t bytes) const;
  // Fails every pending transfer of the member (the group is unusable after):
  // once it returns, nothing more is written into the member's memory.
  void close() const;
};

// The point-to-point buffers a collective has in flight, so abort() can wake
// their waits (Gloo's abortWaitRecv/abortWaitSend) from another thread.
struct AbortState {
  std::mutex mutex;
  bool aborted = false;
  std::unordered_set<gloo::transport::UnboundBuffer*> live;
  // Buffers of an aborted collective: Gloo's loop thread may still be
  // completing them, so they are destroyed only after the context is.
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> graveyard;
};

class GlooCommunicator final : public Communicator {
 public:
  // `context` is connected to the other ranks of the group; null for a group of
  // one (every collective is then a local copy). `timeout` bounds each wait for
  // one point-to-point transfer, not the whole collective.
  GlooCommunicator(std::shared_ptr<gloo::Context> context, int rank, int size, std::string prefix,
                   std::chrono::milliseconds timeout);
  // A member of ranks that are threads of this process, sharing `local`.
  GlooCommunicator(std::shared_ptr<LocalExchange> local, int rank, int size, std::string prefix,
                   std::chrono::milliseconds timeout);
  ~GlooCommunicator() override;

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  std::string backendName() const override { return "gloo"; }

  void allReduce(void* data, size_t count, DType dtype) override;
  void reduceScatter(const void* input, void* output, size_t count, DType dtype) override;
  void allGather(const void* input, void* output, size_t count, DType dtype) override;
  void broadcast(void* data, size_t count, DType dtype, int root) override;
  void barrier() override;

  uint64_t bytesSent() const override { return m_bytesSent.load(std::memory_order_relaxed); }
  void abort() override;
  // Pipeline point-to-point: one Gloo message (envelope + payload) per call, in
  // a slot of its own per direction of each pair, numbered in send order.
  void send(const void* header, size_t header_bytes, const void* data, size_t bytes, int peer) override;
  bool recv(void* header, size_t header_bytes, void* data, size_t bytes, int peer,
            std::chrono::milliseconds timeout) override;
  void flushSends() override;

  const std::string& prefix() const { return m_prefix; }
  // "shared memory" (thread ranks of one process) or "tcp".
  const char* transportName() const { return m_local ? "shared memory" : "tcp"; }

  // The pipelining unit (1 MiB): a chunk is sent in segments this large, big
  // enough to amortise a message's overhead, small enough that the receive of
  // one overlaps the reduction of the one before. Every member of a group
  // must use the same size, set before a collective. Tests set a small one so
  // that a collective of a few thousand elements spans several segments (the
  // same code path as megabytes at 1 MiB). Messages are what the rings over
  // TCP send, and the mailbox's broadcast chain; the rings on thread ranks'
  // memory take whole chunks (no message to amortise, no receive to overlap).
  static constexpr size_t kDefaultSegmentBytes = size_t{1} << 20;
  void setSegmentBytes(size_t bytes);
  size_t segmentBytes() const { return m_segmentBytes; }

  // The cross-process fingerprint check's transport: sends `bytes` of `mine`
  // to every peer and receives theirs into all + group_rank * bytes (this
  // rank's own copied in). Not counted in bytesSent(): it is no part of the
  // training's traffic. Returns the group ranks that did not deliver within
  // `timeout` (a dead or stuck peer); then the group is unusable.
  std::vector<int> exchangeUncounted(const void* mine, void* all, size_t bytes, std::chrono::milliseconds timeout);

 private:
  // Runs one collective's body; Gloo errors become RunError naming op, rank, group.
  template <typename Body>
  void guarded(const char* op, Body&& body);
  // First slot of a fresh range for one collective call: calls never share slots.
  uint64_t nextSlotBase();
  // Receive and partial-sum space reused across calls (uninitialised, >= bytes).
  char* scratch(size_t bytes);

  void ringAllReduce(char* data, size_t count, DType dtype);
  void ringReduceScatter(const char* input, char* output, size_t count, DType dtype);
  void ringAllGather(const char* input, char* output, size_t count, DType dtype);
  void chainBroadcast(char* data, size_t count, DType dtype, int root);
  // The same rings between thread ranks, run straight on each other's memory
  // (local_rings.cpp): identical chunks, sums in the same order, the same
  // bytes counted (each hop on the sender's counter, by its reader).
  void localAllReduce(char* data, size_t count, DType dtype);
  void localReduceScatter(const char* input, char* output, size_t count, DType dtype);
  void localAllGather(const char* input, char* output, size_t count, DType dtype);

  PointToPointLinks links() const { return {m_context.get(), m_local.get(), m_rank}; }

  std::shared_ptr<gloo::Context> m_context;
  std::shared_ptr<LocalExchange> m_local;
  int m_rank;
  int m_size;
  std::string m_prefix;
  std::chrono::milliseconds m_timeout;
  size_t m_segmentBytes = kDefaultSegmentBytes;
  std::atomic<uint64_t> m_bytesSent{0};  // bytes, summed at each send call
  uint64_t m_calls = 0;                  // collectives started (owned by the rank's thread)
  AbortState m_abort;
  std::unique_ptr<char[]> m_scratch;
  size_t m_scratchBytes = 0;
  // Point-to-point: sends not yet known delivered (each owns its message's
  // copy), and the messages sent to / received from each peer so far.
  struct PendingSend {
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    std::unique_ptr<char[]> message;
  };
  std::vector<PendingSend> m_pendingSends;
  std::vector<uint64_t> m_sentTo, m_receivedFrom;
  std::vector<std::unique_ptr<char[]>> m_lateMessages;  // of receives that timed out (Gloo may still write them)
  uint64_t p2pSlot(int from, int to, uint64_t index) const;
};

// How createGlooGroup links thread ranks: SHARDSCOPE_THREAD_TRANSPORT=shm (or
// unset) for the shared-memory exchange, =tcp for Gloo over TCP loopback (what
// bench_allreduce compares it with). Another value is a ConfigError naming it.
enum class ThreadTransport { SharedMemory, TcpLoopback };
ThreadTransport threadTransport();

// This process's member `rank` of a group whose other members are other
// processes (or machines): Gloo's TCP transport on `hostname` (the address the
// peers reach this one at), rendezvous through `store` under `prefix`. Blocks
// until every member has connected or `connect_timeout_ms` passes (RunError).
std::unique_ptr<GlooCommunicator> connectGlooMember(int size, int rank, const std::string& prefix,
                                                    gloo::rendezvous::Store& store, const std::string& hostname,
                                                    int timeout_ms, int connect_timeout_ms);

}  // namespace shardscope

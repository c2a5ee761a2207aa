// Collective backend interface: one instance per rank per group. Calls block the
// calling (stream) thread until this rank's part is done, like a CPU collective.
// Buffers are bf16 or f32; reductions sum in fp32 and round back to the dtype.
// The fingerprint check and trace events live one level up (ProcessGroup).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/errors.h"

namespace shardscope {

enum class DType : uint8_t { F32, BF16 };
inline size_t dtypeSize(DType t) { return t == DType::F32 ? 4 : 2; }

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;  // rank within this group
  virtual int size() const = 0;
  virtual std::string backendName() const = 0;

  // In place: data(count) := sum over ranks.
  virtual void allReduce(void* data, size_t count, DType dtype) = 0;
  // input(count * size()) -> output(count) = sum over ranks of chunk rank() of input.
  virtual void reduceScatter(const void* input, void* output, size_t count, DType dtype) = 0;
  // input(count) -> output(count * size()), chunk r = rank r's input.
  virtual void allGather(const void* input, void* output, size_t count, DType dtype) = 0;
  virtual void broadcast(void* data, size_t count, DType dtype, int root) = 0;
  virtual void barrier() = 0;

  // Bytes this rank has put on the wire (sent to peers) since construction:
  // counted at each point-to-point send, not derived from a formula.
  virtual uint64_t bytesSent() const = 0;

  // Any thread: wakes a collective blocked in this communicator and makes every
  // later one throw, so a stopped run never waits out a transport timeout.
  virtual void abort() {}

  // Point-to-point, between pipeline stages: one message to group rank `peer`,
  // an envelope of `header_bytes` (what the receiver checks and the modeled
  // clock reads) and `bytes` of payload. Messages between one pair arrive in
  // the order they were sent. send() returns at once (the payload is copied;
  // the transfer completes in the background); flushSends() returns once every
  // send so far has been delivered. recv() blocks until the message from
  // `peer` has landed, or returns false when `timeout` passes first (the peer
  // never sent; the group is then unusable). Only the payload counts in
  // bytesSent(). A backend without point-to-point throws RunError.
  virtual void send(const void* header, size_t header_bytes, const void* data, size_t bytes, int peer);
  virtual bool recv(void* header, size_t header_bytes, void* data, size_t bytes, int peer,
                    std::chrono::milliseconds timeout);
  virtual void flushSends() {}
};

inline void Communicator::send(const void*, size_t, const void*, size_t, int) {
  throw RunError("the " + backendName() + " communicator has no point-to-point transfers (pipeline stages)");
}
inline bool Communicator::recv(void*, size_t, void*, size_t, int, std::chrono::milliseconds) {
  throw RunError("the " + backendName() + " communicator has no point-to-point transfers (pipeline stages)");
}

// Creates a connected group of `size` communicators, one per rank, for ranks
// that are threads of this process. Gloo over TCP loopback with an in-process
// rendezvous store; `prefix` keeps groups apart. Throws std::runtime_error.
std::vector<std::unique_ptr<Communicator>> createGlooGroup(int size, const std::string& prefix,
                                                           int timeout_ms);

}  // namespace shardscope

// The GPU flavour of Communicator: buffers are device memory, and each call
// enqueues the collective on the rank's stream and returns (as NCCL does); the
// result is ready for later work on that stream, or after stream sync. Every rank
// must issue the same collectives in the same order, each from its own thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/communicator.h"
#include "cuda/stream_handle.h"

namespace shardscope::gpu {

enum class CollectiveOp : uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, Barrier };
const char* collectiveName(CollectiveOp op);

// Bytes `rank` puts on the wire for one collective under the ring algorithms of
// GlooCommunicator / MetaCommunicator (all-reduce in P chunks of count / P, the
// first count % P one element longer; broadcast as a chain from the root), so GPU
// runs report the same traffic as CPU runs.
uint64_t ringBytesSent(CollectiveOp op, int rank, int size, size_t count, DType dtype,
                       int root = 0);

class GpuCommunicator : public Communicator {
 public:
  // The stream later collectives are enqueued on (the default is one the
  // communicator owns). The caller keeps it alive while it is set.
  virtual void setStream(StreamHandle stream) = 0;
  virtual StreamHandle stream() const = 0;
  virtual int device() const = 0;
};

}  // namespace shardscope::gpu

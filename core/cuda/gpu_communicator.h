// The GPU flavour of Communicator: buffers are device memory, and each call
// enqueues the collective on the rank's stream and returns (as NCCL does); the
// result is ready for later work on that stream, or after stream sync. Every rank
// must issue the same collectives in the same order, each from its own thread.
// Bytes sent are counted with common/collective.h's ringBytesSent, so GPU runs
// report the same traffic as CPU runs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/communicator.h"
#include "common/collective.h"
#include "cuda/stream_handle.h"

namespace shardscope::gpu {

class GpuCommunicator : public Communicator {
 public:
  // The stream later collectives are enqueued on (the default is one the
  // communicator owns). The caller keeps it alive while it is set.
  virtual void setStream(StreamHandle stream) = 0;
  virtual StreamHandle stream() const = 0;
  virtual int device() const = 0;
};

}  // namespace shardscope::gpu

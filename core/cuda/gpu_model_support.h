// What the GPU models share: the compute stream of the calling thread, and the
// loss's landing slot — row losses summed in double on the device and copied
// into pinned host memory, so loss() syncs nothing and the value is read once
// the engine has drained the compute stream.
#pragma once

#include <cstddef>

#include "cuda/stream_handle.h"
#include "memory/memory_ledger.h"

namespace shardscope::gpu {

// The stream of currentDeviceQueue(); a logic_error naming `model::method`
// when the caller is not a stream task of a GPU run.
StreamHandle computeStream(const char* model, const char* method);

class PinnedLoss {
 public:
  PinnedLoss();  // cudaMallocHost: call off the hot path (it may synchronize)
  ~PinnedLoss();
  PinnedLoss(const PinnedLoss&) = delete;
  PinnedLoss& operator=(const PinnedLoss&) = delete;
  // Enqueues sum(row_loss[0..rows)) in double into the slot; the two device
  // temporaries are booked in `ledger` as Workspace and freed stream-ordered.
  void enqueueSum(const float* row_loss, size_t rows, MemoryLedger& ledger, StreamHandle stream);
  double value() const { return *m_host; }  // NaN before the first sum

 private:
  double* m_host = nullptr;
};

}  // namespace shardscope::gpu

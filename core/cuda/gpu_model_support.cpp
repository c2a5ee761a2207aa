#include "cuda/gpu_model_support.h"

#include <cuda_runtime_api.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "device/rank_device.h"
#include "memory/buffer.h"

namespace shardscope::gpu {

StreamHandle computeStream(const char* model, const char* method) {
  DeviceQueue* queue = currentDeviceQueue();
  if (!queue) {
    throw std::logic_error(std::string(model) + "::" + method +
                           " ran on a thread without a device queue; it must run as a task of "
                           "the rank's compute stream (currentDeviceQueue() is null)");
  }
  return static_cast<StreamHandle>(queue->nativeHandle());
}

PinnedLoss::PinnedLoss() {
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m_host), sizeof(double)));
  *m_host = std::numeric_limits<double>::quiet_NaN();
}

PinnedLoss::~PinnedLoss() {
  // A destructor cannot throw; the engine drained the stream before this.
  if (m_host) static_cast<void>(cudaFreeHost(m_host));
}

void PinnedLoss::enqueueSum(const float* row_loss, size_t rows, MemoryLedger& ledger, StreamHandle stream) {
  Buffer<double> sum(ledger, Category::Workspace, 1);
  sumToDouble(row_loss, rows, sum.data(), stream);
  CUDA_CHECK(cudaMemcpyAsync(m_host, sum.data(), sizeof(double), cudaMemcpyDeviceToHost, stream));
}

}  // namespace shardscope::gpu

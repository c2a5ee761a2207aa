// CachingAllocator: the CUDA backend of BlockPool. cudaFree synchronizes the
// whole device, which is why freed blocks are cached instead of returned.
#include "cuda/caching_allocator.h"

#include "cuda/cuda_stream.h"

namespace shardscope::gpu {

void* CachingAllocator::Backend::allocate(size_t bytes) {
  DeviceGuard guard(m_device);
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: the pool retries after releasing its cache
    return nullptr;
  }
  CUDA_CHECK(status);
  return ptr;
}

void CachingAllocator::Backend::release(void* ptr) {
  DeviceGuard guard(m_device);
  CUDA_CHECK(cudaFree(ptr));
}

BlockPoolBackend::EventId CachingAllocator::Backend::recordEvent(StreamHandle stream) {
  DeviceGuard guard(m_device);
  cudaEvent_t event = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(event, stream));
  return event;
}

bool CachingAllocator::Backend::eventDone(EventId event) {
  const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  CUDA_CHECK(status);
  return true;
}

void CachingAllocator::Backend::destroyEvent(EventId event) {
  cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

CachingAllocator::CachingAllocator(int device, MemoryLedger& ledger, StreamHandle default_stream,
                                   std::string name)
    : m_device(device),
      m_ledger(ledger),
      m_defaultStream(default_stream),
      m_backend(device),
      m_pool(m_backend, &ledger,
             name.empty() ? "GPU " + std::to_string(device) : std::move(name)) {}

CachingAllocator::~CachingAllocator() = default;

void* CachingAllocator::allocate(size_t bytes, Category category, StreamHandle stream) {
  return m_pool.allocate(bytes, category, stream);
}

DeviceMemoryCheck CachingAllocator::crossCheck() const {
  DeviceGuard guard(m_device);
  DeviceMemoryCheck check;
  CUDA_CHECK(cudaMemGetInfo(&check.free_bytes, &check.total_bytes));
  const AllocatorStats s = m_pool.stats();
  check.used_bytes = check.total_bytes - check.free_bytes;
  check.reserved_bytes = s.reserved_bytes;
  check.allocated_bytes = s.allocated_bytes;
  check.outside_bytes = static_cast<int64_t>(check.used_bytes) - s.reserved_bytes;
  check.consistent = static_cast<int64_t>(check.used_bytes) >= s.reserved_bytes &&
                     s.reserved_bytes >= s.allocated_bytes;
  return check;
}

}  // namespace shardscope::gpu

// Device memory for one rank: a BlockPool over cudaMalloc/cudaFree with CUDA
// events, booking every allocation in the rank's MemoryLedger, plus DeviceBuffer<T>,
// the RAII handle that engine code holds (like Buffer<T> on the CPU). The ledger
// books bytes as asked ("allocated"); cudaMemGetInfo sees "reserved" and more.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda/block_pool.h"
#include "cuda/cuda_check.h"
#include "memory/buffer.h"
#include "memory/memory_ledger.h"

namespace shardscope::gpu {

// The allocator's books against the device's: used = total - free counts every
// process and every allocation outside this allocator (the CUDA context, cuBLAS
// workspaces, other ranks' allocators on the same GPU), so used >= reserved.
struct DeviceMemoryCheck {
  size_t total_bytes = 0;     // cudaMemGetInfo
  size_t free_bytes = 0;      // cudaMemGetInfo
  size_t used_bytes = 0;      // total - free
  int64_t reserved_bytes = 0; // this allocator
  int64_t allocated_bytes = 0;
  int64_t outside_bytes = 0;  // used - reserved: not ours
  bool consistent = false;    // used >= reserved >= allocated
};

class CachingAllocator {
 public:
  // ledger: the rank's books (required; a meta ledger makes every buffer a
  // booking without memory, as Buffer<T> does). default_stream: for buffers that
  // name none.
  CachingAllocator(int device, MemoryLedger& ledger, StreamHandle default_stream = nullptr,
                   std::string name = "");
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(size_t bytes, Category category, StreamHandle stream);
  void free(void* ptr) { m_pool.free(ptr); }
  void markUsedOn(void* ptr, StreamHandle stream) { m_pool.markUsedOn(ptr, stream); }
  void releaseCached() { m_pool.releaseCached(); }
  AllocatorStats stats() const { return m_pool.stats(); }
  std::string describe() const { return m_pool.describe(); }
  DeviceMemoryCheck crossCheck() const;

  int device() const { return m_device; }
  MemoryLedger& ledger() { return m_ledger; }
  bool meta() const { return m_ledger.meta(); }
  StreamHandle defaultStream() const { return m_defaultStream; }

 private:
  class Backend final : public BlockPoolBackend {
   public:
    explicit Backend(int device) : m_device(device) {}
    void* allocate(size_t bytes) override;
    void release(void* ptr) override;
    EventId recordEvent(StreamHandle stream) override;
    bool eventDone(EventId event) override;
    void destroyEvent(EventId event) override;

   private:
    int m_device;
  };

  int m_device;
  MemoryLedger& m_ledger;
  StreamHandle m_defaultStream;
  Backend m_backend;
  BlockPool m_pool;
};

// A typed, ledger-tagged device allocation; move-only; the destructor frees to
// the allocator (reusable by later work on the buffer's stream at once). Zeroed
// on allocation, like Buffer<T>, by a memset ordered on the buffer's stream.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(CachingAllocator& allocator, Category category, size_t count)
      : DeviceBuffer(allocator, category, count, allocator.defaultStream()) {}
  DeviceBuffer(CachingAllocator& allocator, Category category, size_t count, StreamHandle stream)
      : m_allocator(&allocator), m_category(category), m_count(count), m_stream(stream) {
    if (count == 0) return;
    if (allocator.meta()) {
      m_data = reinterpret_cast<T*>(kMetaAddress);
      allocator.ledger().onAlloc(category, static_cast<int64_t>(bytes()));
      return;
    }
    m_data = static_cast<T*>(allocator.allocate(bytes(), category, stream));
    CUDA_CHECK(cudaMemsetAsync(m_data, 0, bytes(), stream));
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      m_allocator = std::exchange(o.m_allocator, nullptr);
      m_category = o.m_category;
      m_data = std::exchange(o.m_data, nullptr);
      m_count = std::exchange(o.m_count, 0);
      m_stream = o.m_stream;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void reset() noexcept {
    if (m_count > 0) {
      if (m_allocator->meta()) {
        m_allocator->ledger().onFree(m_category, static_cast<int64_t>(bytes()));
      } else {
        try {
          m_allocator->free(m_data);
        } catch (const std::exception&) {
          // Only a lost CUDA context fails here; the block is gone with it.
        }
      }
    }
    m_data = nullptr;
    m_count = 0;
  }

  // Asynchronous on `stream` (default: the buffer's); host memory must stay valid
  // until the stream reaches the copy (pageable memory is staged, so it is at once).
  void copyFromHost(const T* src, size_t count, StreamHandle stream) {
    checkCount(count, "copyFromHost");
    CUDA_CHECK(cudaMemcpyAsync(m_data, src, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  void copyFromHost(const T* src, size_t count) { copyFromHost(src, count, m_stream); }
  // Synchronous: returns when `dst` holds the data.
  void copyToHost(T* dst, size_t count, StreamHandle stream) const {
    checkCount(count, "copyToHost");
    CUDA_CHECK(cudaMemcpyAsync(dst, m_data, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void copyToHost(T* dst, size_t count) const { copyToHost(dst, count, m_stream); }

  T* data() { return m_data; }
  const T* data() const { return m_data; }
  size_t size() const { return m_count; }
  size_t bytes() const { return m_count * sizeof(T); }
  bool empty() const { return m_count == 0; }
  Category category() const { return m_category; }
  StreamHandle stream() const { return m_stream; }

 private:
  void checkCount(size_t count, const char* what) const {
    if (count > m_count) {
      throw std::out_of_range(std::string("DeviceBuffer::") + what + ": " +
                              std::to_string(count) + " elements exceed the buffer's " +
                              std::to_string(m_count));
    }
  }

  CachingAllocator* m_allocator = nullptr;
  Category m_category = Category::Workspace;
  T* m_data = nullptr;
  size_t m_count = 0;
  StreamHandle m_stream = nullptr;
};

}  // namespace shardscope::gpu

// A typed, ledger-tagged allocation: the only way engine code gets memory for
// model state, communication buffers or activations, so the ledger sees every
// byte. Move-only; the destructor books the free. On a GPU run (the ledger has
// DeviceMemory) the data is device memory and the device allocator books it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <utility>

#include "memory/device_memory.h"
#include "memory/host_allocation.h"
#include "memory/memory_ledger.h"

namespace shardscope {

inline constexpr uintptr_t kMetaAddress = 0x1000;

template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(MemoryLedger& ledger, Category category, size_t count) : Buffer(ledger, category, count, sizeof(T)) {}
  // Books `booked_element_bytes` per element instead of sizeof(T): a tensor the
  // host computes in fp32 but a GPU run would keep narrower (bf16 activations
  // under autocast). The device allocator books what it allocates.
  Buffer(MemoryLedger& ledger, Category category, size_t count, size_t booked_element_bytes)
      : m_ledger(&ledger), m_category(category), m_count(count), m_booked(count * booked_element_bytes) {
    if (count == 0) return;
    const size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
    if (ledger.meta()) {
      // A meta run books the bytes without having them. data() is a non-null
      // address in the never-mapped first 64 KiB (below vm.mmap_min_addr): offsets
      // from it are ordinary arithmetic, and a stray touch faults at once. (One
      // mapping per buffer would exceed vm.max_map_count at 512 ranks.)
      m_data = reinterpret_cast<T*>(kMetaAddress);
    } else if (DeviceMemory* device = ledger.deviceMemory()) {
      m_data = static_cast<T*>(device->allocate(count * sizeof(T), category));  // zeroed, booked
      m_device = device;
      return;
    } else {
      m_data = static_cast<T*>(hostAllocate(bytes));
      if (!m_data) throw std::bad_alloc();
      std::memset(static_cast<void*>(m_data), 0, count * sizeof(T));
    }
    m_ledger->onAlloc(m_category, static_cast<int64_t>(m_booked));
  }
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      m_ledger = std::exchange(o.m_ledger, nullptr);
      m_device = std::exchange(o.m_device, nullptr);
      m_category = o.m_category;
      m_data = std::exchange(o.m_data, nullptr);
      m_count = std::exchange(o.m_count, 0);
      m_booked = std::exchange(o.m_booked, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void reset() {
    if (m_count > 0) {
      if (m_device) {
        m_device->free(m_data);  // books the free
      } else {
        m_ledger->onFree(m_category, static_cast<int64_t>(m_booked));
        if (!m_ledger->meta()) hostFree(m_data, (m_count * sizeof(T) + 63) / 64 * 64);
      }
    }
    m_data = nullptr;
    m_count = 0;
    m_booked = 0;
    m_device = nullptr;
  }

  T* data() { return m_data; }
  const T* data() const { return m_data; }
  size_t size() const { return m_count; }
  size_t bytes() const { return m_count * sizeof(T); }
  size_t bookedBytes() const { return m_booked; }  // what the ledger holds for it
  bool empty() const { return m_count == 0; }
  std::span<T> span() { return {m_data, m_count}; }
  std::span<const T> span() const { return {m_data, m_count}; }
  T& operator[](size_t i) { return m_data[i]; }
  const T& operator[](size_t i) const { return m_data[i]; }
  Category category() const { return m_category; }

 private:
  MemoryLedger* m_ledger = nullptr;
  DeviceMemory* m_device = nullptr;  // where the data lives on a GPU run (null: host memory)
  Category m_category = Category::Workspace;
  T* m_data = nullptr;
  size_t m_count = 0;
  size_t m_booked = 0;  // bytes booked in the ledger
};

}  // namespace shardscope

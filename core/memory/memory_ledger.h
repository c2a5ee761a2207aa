// The allocator's books for one rank: current and peak bytes per category, and
// the peak of model state (param + grad + master + adam_m + adam_v) taken as one
// sum — the ZeRO paper's "bytes per parameter" — which is not the sum of the
// per-category peaks. Every alloc/free is also an event with the running total.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

#include "common/run_clock.h"
#include "trace/event.h"
#include "trace/event_log.h"

namespace shardscope {

struct LedgerSnapshot {
  std::array<int64_t, kCategoryCount> current{};
  std::array<int64_t, kCategoryCount> peak{};
  int64_t model_state_peak = 0;  // bytes, peak of the five model-state categories summed
  int64_t total_peak = 0;        // bytes, peak of all categories summed
};

bool isModelState(Category c);

class DeviceMemory;  // memory/device_memory.h

class MemoryLedger {
 public:
  MemoryLedger(int rank, EventLog* log, const RunClock* clock, bool meta = false)
      : m_rank(rank), m_log(log), m_clock(clock), m_meta(meta) {}
  // Shapes-only run: buffers are booked here but never allocated.
  bool meta() const { return m_meta; }
  // GPU runs: where Buffer<T> gets its memory (the device allocator, which
  // books this ledger itself); null on the CPU backend. Set before any Buffer.
  void setDeviceMemory(DeviceMemory* memory) { m_deviceMemory = memory; }
  DeviceMemory* deviceMemory() const { return m_deviceMemory; }

  void onAlloc(Category c, int64_t bytes);
  void onFree(Category c, int64_t bytes);
  // Step number stamped on alloc/free events.
  void setStep(int step);
  // Books from now on without recording events: a stopped run's buffers are
  // released by its teardown, not by its algorithm, and its trace ends where it stopped.
  void stopRecording();

  LedgerSnapshot snapshot() const;
  int64_t current(Category c) const;
  int64_t peak(Category c) const;

 private:
  void record(EventKind kind, Category c, int64_t bytes);

  const int m_rank;
  EventLog* m_log;
  const RunClock* m_clock;
  const bool m_meta;
  DeviceMemory* m_deviceMemory = nullptr;
  mutable std::mutex m_mutex;
  LedgerSnapshot m_books;
  int64_t m_modelState = 0;
  int64_t m_total = 0;
  int m_step = -1;
};

}  // namespace shardscope

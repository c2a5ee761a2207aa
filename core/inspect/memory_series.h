// Per-rank memory ledger over time, rebuilt from alloc/free events alone: each
// carries its category's running bytes (`value`), so replaying them in record
// order reproduces the allocator's books exactly; no sizes are summed here.
// Incremental (per-rank cursors); the peak is the first moment the model-state
// sum (param+grad+master+adam_m+adam_v) reaches its maximum. No widgets.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "trace/event.h"

namespace shardscope {

class EventStore;

struct MemorySample {
  int64_t t_ns = 0;                             // ns since run start
  std::array<int64_t, kCategoryCount> bytes{};  // current bytes per category after the op
  // Sums clamp to int64's range (a trace's `value`s are any int64).
  int64_t modelState() const;
  int64_t total() const;
};

class MemorySeries {
 public:
  void sync(const EventStore& store);

  int rankCount() const { return static_cast<int>(m_ranks.size()); }
  const std::vector<MemorySample>& samples(int rank) const { return m_ranks[static_cast<size_t>(rank)].samples; }
  // nullptr while the rank has allocated nothing.
  const MemorySample* peakModelState(int rank) const;
  const MemorySample* peakTotal(int rank) const;
  // The books at t: the last sample at or before t (zeros before the first).
  MemorySample at(int rank, int64_t t_ns) const;

 private:
  struct RankSeries {
    std::vector<MemorySample> samples;
    MemorySample current;
    size_t cursor = 0;          // store events consumed
    int64_t peakState = -1;
    int64_t peakTotal = -1;
    size_t peakStateIndex = 0;
    size_t peakTotalIndex = 0;
  };

  const EventStore* m_store = nullptr;
  uint64_t m_generation = ~0ull;
  std::vector<RankSeries> m_ranks;
};

}  // namespace shardscope

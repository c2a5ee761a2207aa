// Per-rank memory ledger over time, rebuilt from alloc/free events alone: each
// carries its category's running bytes (`value`), so replaying them in record
// order reproduces the allocator's books exactly; no sizes are summed here.
// Incremental (per-rank cursors); the peak is the first moment the model-state
// sum (param+grad+master+adam_m+adam_v) reaches its maximum. A replicated
// run's copied ranks read their source's series (built once). No widgets.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "inspect/category_filter.h"
#include "trace/event.h"

namespace shardscope {

class EventStore;

struct MemorySample {
  int64_t t_ns = 0;                             // ns since run start
  std::array<int64_t, kCategoryCount> bytes{};  // current bytes per category after the op
  // Sums clamp to int64's range (a trace's `value`s are any int64).
  int64_t modelState() const;
  int64_t total() const;
  // The shown categories' bytes summed (all: total()).
  int64_t sumOf(const CategoryFilter& shown) const;
};

class MemorySeries {
 public:
  void sync(const EventStore& store);

  int rankCount() const { return static_cast<int>(m_ranks.size()); }
  const std::vector<MemorySample>& samples(int rank) const { return series(rank).samples; }
  // nullptr while the rank has allocated nothing.
  const MemorySample* peakModelState(int rank) const;
  const MemorySample* peakTotal(int rank) const;
  // The first moment the shown categories' sum peaks on rank: the memory
  // chart's "peak" of what it draws (all categories: peakTotal, whose sum is
  // the summary's total_peak_bytes for that rank; model state: peakModelState).
  const MemorySample* peakOf(int rank, const CategoryFilter& shown) const;
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

  // Rank's series: its own, or a copy's source's (its own stays empty).
  const RankSeries& series(int rank) const {
    const auto r = static_cast<size_t>(rank);
    return m_ranks[r < m_source.size() ? static_cast<size_t>(m_source[r]) : r];
  }

  const EventStore* m_store = nullptr;
  uint64_t m_generation = ~0ull;
  std::vector<RankSeries> m_ranks;
  std::vector<int> m_source;  // per rank: whose series it reads (the store's rank map)
};

}  // namespace shardscope

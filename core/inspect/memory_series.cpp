#include "inspect/memory_series.h"

#include <algorithm>

#include "common/checked_math.h"
#include "inspect/event_store.h"
#include "memory/memory_ledger.h"

namespace shardscope {

int64_t MemorySample::modelState() const {
  int64_t sum = 0;
  for (int c = 0; c < kCategoryCount; ++c)
    if (isModelState(static_cast<Category>(c))) sum = saturatingAdd(sum, bytes[static_cast<size_t>(c)]);
  return sum;
}

int64_t MemorySample::total() const {
  int64_t sum = 0;
  for (int64_t b : bytes) sum = saturatingAdd(sum, b);  // a trace's values are any int64
  return sum;
}

int64_t MemorySample::sumOf(const CategoryFilter& shown) const {
  int64_t sum = 0;
  for (int c = 0; c < kCategoryCount; ++c)
    if (shown.shows(static_cast<Category>(c))) sum = saturatingAdd(sum, bytes[static_cast<size_t>(c)]);
  return sum;
}

void MemorySeries::sync(const EventStore& store) {
  if (m_store != &store || m_generation != store.generation()) {
    m_store = &store;
    m_generation = store.generation();
    m_ranks.clear();
  }
  if (m_ranks.size() < static_cast<size_t>(store.rankCount()))
    m_ranks.resize(static_cast<size_t>(store.rankCount()));
  m_source.resize(m_ranks.size());
  for (size_t r = 0; r < m_ranks.size(); ++r) {
    m_source[r] = store.sourceOf(static_cast<int>(r));
    if (m_source[r] != static_cast<int>(r)) continue;  // a copy: its source's series, replayed once
    RankSeries& s = m_ranks[r];
    const std::vector<Event>& events = store.events(static_cast<int>(r));
    for (; s.cursor < events.size(); ++s.cursor) {
      const Event& e = events[s.cursor];
      if (e.kind != EventKind::Alloc && e.kind != EventKind::Free) continue;
      const auto c = static_cast<size_t>(e.category);
      if (c >= static_cast<size_t>(kCategoryCount)) continue;
      s.current.bytes[c] = e.value;
      // Record order is the ledger's order; clamp time so the series stays monotonic.
      s.current.t_ns = s.samples.empty() ? e.begin_ns : std::max(e.begin_ns, s.samples.back().t_ns);
      s.samples.push_back(s.current);
      const int64_t state = s.current.modelState(), total = s.current.total();
      if (state > s.peakState) {
        s.peakState = state;
        s.peakStateIndex = s.samples.size() - 1;
      }
      if (total > s.peakTotal) {
        s.peakTotal = total;
        s.peakTotalIndex = s.samples.size() - 1;
      }
    }
  }
}

const MemorySample* MemorySeries::peakModelState(int rank) const {
  if (rank < 0 || rank >= rankCount()) return nullptr;
  const RankSeries& s = series(rank);
  return s.samples.empty() ? nullptr : &s.samples[s.peakStateIndex];
}

const MemorySample* MemorySeries::peakTotal(int rank) const {
  if (rank < 0 || rank >= rankCount()) return nullptr;
  const RankSeries& s = series(rank);
  return s.samples.empty() ? nullptr : &s.samples[s.peakTotalIndex];
}

const MemorySample* MemorySeries::peakOf(int rank, const CategoryFilter& shown) const {
  if (shown.showsAll()) return peakTotal(rank);
  if (shown == CategoryFilter::modelState()) return peakModelState(rank);
  if (rank < 0 || rank >= rankCount()) return nullptr;
  const RankSeries& s = series(rank);
  const MemorySample* best = nullptr;
  int64_t top = -1;
  for (const MemorySample& sample : s.samples)
    if (const int64_t sum = sample.sumOf(shown); sum > top) {
      top = sum;
      best = &sample;
    }
  return best;
}

MemorySample MemorySeries::at(int rank, int64_t t_ns) const {
  MemorySample out;
  out.t_ns = t_ns;
  if (rank < 0 || rank >= rankCount()) return out;
  const auto& samples = series(rank).samples;
  const auto it = std::upper_bound(samples.begin(), samples.end(), t_ns,
                                   [](int64_t t, const MemorySample& s) { return t < s.t_ns; });
  if (it == samples.begin()) return out;
  out = *(it - 1);
  out.t_ns = t_ns;
  return out;
}

}  // namespace shardscope

#include "inspect/event_store.h"

#include <algorithm>

#include "common/json_tree.h"

namespace shardscope {

void EventStore::resetEvents() {
  // New buffers, the old run's freed rather than kept as capacity: nothing may
  // index the old events after a reset (generation() tells), and under ASan a
  // stale index is then a use-after-free instead of a silent read of the
  // previous run's bytes (issue 31's timeline crash was such a read).
  m_events = std::vector<std::vector<Event>>(static_cast<size_t>(std::clamp(m_meta.ranks, 0, kMaxRanks)));
  m_losses.clear();
  m_count = 0;
  m_begin = m_end = 0;
  ++m_generation;
}

void EventStore::reset(const RunTrace& meta) {
  m_meta = meta;
  m_meta.events.clear();
  resetEvents();
}

void EventStore::clear() {
  m_meta = RunTrace{};
  resetEvents();
}

void EventStore::setFromTrace(RunTrace trace) {
  std::vector<std::vector<Event>> events = std::move(trace.events);
  trace.events.clear();
  std::vector<double> losses = std::move(trace.losses);
  trace.losses.clear();
  m_meta = std::move(trace);
  resetEvents();
  m_losses = std::move(losses);  // the trace's own (a caller may set the live run's after)
  for (size_t r = 0; r < events.size() && r < static_cast<size_t>(kMaxRanks); ++r) {
    if (events[r].empty() || isCopy(static_cast<int>(r))) continue;
    if (r >= m_events.size()) m_events.resize(r + 1);
    m_events[r] = std::move(events[r]);  // moved, not copied: a 70B step's log is large
    noteEvents(m_events[r]);
  }
}

void EventStore::appendEvents(int rank, std::span<const Event> events) {
  if (rank < 0 || rank >= kMaxRanks || events.empty() || isCopy(rank)) return;
  if (static_cast<size_t>(rank) >= m_events.size()) m_events.resize(static_cast<size_t>(rank) + 1);
  std::vector<Event>& out = m_events[static_cast<size_t>(rank)];
  out.insert(out.end(), events.begin(), events.end());
  noteEvents(events);
}

void EventStore::noteEvents(std::span<const Event> events) {
  for (const Event& e : events) {
    if (m_count == 0) {
      m_begin = e.begin_ns;
      m_end = e.end_ns;
    }
    m_begin = std::min(m_begin, e.begin_ns);
    m_end = std::max(m_end, std::max(e.begin_ns, e.end_ns));
    ++m_count;
  }
}

size_t EventStore::eventCount() const {
  if (m_meta.copies.empty()) return m_count;
  size_t n = m_count;
  for (size_t r = 0; r < m_events.size(); ++r)
    if (isCopy(static_cast<int>(r))) n += events(static_cast<int>(r)).size();
  return n;
}

void EventStore::setLosses(std::vector<double> losses) { m_losses = std::move(losses); }

std::string EventStore::blockName(int segment) const {
  if (segment >= 0 && static_cast<size_t>(segment) < m_meta.block_names.size())
    return m_meta.block_names[static_cast<size_t>(segment)];
  return "segment " + std::to_string(segment);
}

RunTrace EventStore::toRunTrace() const {
  RunTrace t = m_meta;
  t.ranks = std::max(t.ranks, rankCount());
  t.events = m_events;
  if (!m_meta.config || m_meta.config->backend != Backend::Meta) t.losses = m_losses;
  return t;
}

}  // namespace shardscope

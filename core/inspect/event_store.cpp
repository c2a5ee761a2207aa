#include "inspect/event_store.h"

#include <algorithm>

#include "common/json_tree.h"

namespace shardscope {

void EventStore::resetEvents() {
  m_events.assign(static_cast<size_t>(std::max(0, m_meta.ranks)), {});
  m_losses.clear();
  m_count = 0;
  m_begin = m_end = 0;
  ++m_generation;
}

void EventStore::reset(const RunTrace& meta) {
  m_meta = meta;
  m_meta.events.clear();
  parseConfig();
  resetEvents();
}

void EventStore::clear() {
  m_meta = RunTrace{};
  parseConfig();
  resetEvents();
}

void EventStore::parseConfig() {
  m_config.reset();
  if (m_meta.config_json.empty()) return;
  try {
    m_config = std::make_shared<const Json>(parseJsonTree(m_meta.config_json));
  } catch (const std::exception&) {
    // The trace reader and the writer both check it; a bad one just means no config.
  }
}

std::string EventStore::configString(std::string_view key, const std::string& fallback) const {
  if (!m_config || !m_config->is_object()) return fallback;
  const auto v = m_config->find(key);
  return v != m_config->end() && v->is_string() ? v->get<std::string>() : fallback;
}

int64_t EventStore::configInt(std::string_view key, int64_t fallback) const {
  if (!m_config || !m_config->is_object()) return fallback;
  const auto v = m_config->find(key);
  int64_t n = 0;
  return v != m_config->end() && jsonInteger(*v, n) ? n : fallback;
}

void EventStore::setFromTrace(RunTrace trace) {
  std::vector<std::vector<Event>> events = std::move(trace.events);
  trace.events.clear();
  m_meta = std::move(trace);
  parseConfig();
  resetEvents();
  for (size_t r = 0; r < events.size(); ++r) appendEvents(static_cast<int>(r), events[r]);
}

void EventStore::appendEvents(int rank, std::span<const Event> events) {
  if (rank < 0 || events.empty()) return;
  if (static_cast<size_t>(rank) >= m_events.size()) m_events.resize(static_cast<size_t>(rank) + 1);
  std::vector<Event>& out = m_events[static_cast<size_t>(rank)];
  out.insert(out.end(), events.begin(), events.end());
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
  return t;
}

}  // namespace shardscope

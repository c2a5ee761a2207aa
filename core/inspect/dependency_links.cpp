#include "inspect/dependency_links.h"

#include "inspect/event_store.h"
#include "trace/event.h"

namespace shardscope {

namespace {

// The op an id names: its duration event (instants such as a bucket's ready
// marker share the id of the op that made them, so prefer the box).
int32_t findOp(const std::vector<Event>& events, int32_t op) {
  int32_t instant = -1;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].op != op) continue;
    if (!isInstant(events[i].kind)) return static_cast<int32_t>(i);
    if (instant < 0) instant = static_cast<int32_t>(i);
  }
  return instant;
}

}  // namespace

std::vector<DependencyLink> dependencyLinks(const EventStore& store, int rank, int32_t index) {
  std::vector<DependencyLink> links;
  if (rank < 0 || rank >= store.rankCount()) return links;
  const std::vector<Event>& events = store.events(rank);
  if (index < 0 || static_cast<size_t>(index) >= events.size()) return links;
  const Event& selected = events[static_cast<size_t>(index)];
  if (selected.dep >= 0)
    if (const int32_t from = findOp(events, selected.dep); from >= 0 && from != index) links.push_back({from, index});
  if (selected.op >= 0)
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].dep == selected.op && static_cast<int32_t>(i) != index && !isInstant(events[i].kind))
        links.push_back({index, static_cast<int32_t>(i)});
  return links;
}

}  // namespace shardscope

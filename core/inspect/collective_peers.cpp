#include "inspect/collective_peers.h"

#include "inspect/event_store.h"
#include "trace/event.h"

namespace shardscope {

std::vector<CollectivePeer> collectivePeers(const EventStore& store, int rank, int32_t index) {
  if (rank < 0 || rank >= store.rankCount() || index < 0) return {};
  const std::vector<Event>& own = store.events(rank);
  if (static_cast<size_t>(index) >= own.size()) return {};
  const Event& selected = own[static_cast<size_t>(index)];
  if (!isAnyCollective(selected.kind) || selected.seq < 0 || selected.group < 0) return {};
  // Its group's members when the trace names them, else every rank that ran
  // an op of that group with that number.
  std::vector<int> members;
  if (const CommGroup* g = store.meta().group(selected.group); g && !g->ranks.empty()) {
    members = g->ranks;
  } else {
    for (int r = 0; r < store.rankCount(); ++r) members.push_back(r);
  }
  std::vector<CollectivePeer> peers;
  for (int r : members) {
    if (r < 0 || r >= store.rankCount()) continue;
    if (r == rank) {
      peers.push_back({rank, index});
      continue;
    }
    const std::vector<Event>& events = store.events(r);
    for (size_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      if (e.group == selected.group && e.seq == selected.seq && e.kind == selected.kind) {
        peers.push_back({r, static_cast<int32_t>(i)});
        break;
      }
    }
  }
  return peers;
}

}  // namespace shardscope

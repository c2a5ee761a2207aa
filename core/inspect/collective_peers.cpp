#include "inspect/collective_peers.h"

#include "inspect/event_store.h"
#include "trace/event.h"

namespace shardscope {

std::vector<CollectivePeer> collectivePeers(const EventStore& store, int rank, int32_t index) {
  if (rank < 0 || rank >= store.rankCount() || index < 0) return {};
  if (static_cast<size_t>(index) >= store.events(rank).size()) return {};
  // eventAt: a copied rank's op carries its own group id, not its source's.
  const Event selected = store.eventAt(rank, static_cast<size_t>(index));
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
    const size_t count = store.events(r).size();
    for (size_t i = 0; i < count; ++i) {
      const Event& source = store.events(r)[i];
      if (source.seq != selected.seq || source.kind != selected.kind) continue;
      if (store.eventAt(r, i).group == selected.group) {
        peers.push_back({r, static_cast<int32_t>(i)});
        break;
      }
    }
  }
  return peers;
}

}  // namespace shardscope

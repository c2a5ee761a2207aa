// The same collective on every member of its group: for a selected collective
// op, the op each other member ran as that call (same group, same sequence
// number, same kind), so the timeline can outline it on every rank and say
// who arrived last. No widgets, no Qt.
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope {

class EventStore;

struct CollectivePeer {
  int rank = -1;
  int32_t index = -1;  // into store.events(rank)
};

// The members' ops of the collective at events(rank)[index], the selected one
// included, by rank; empty when it is no collective or has no sequence number
// (an imported op its trace did not number). A member that never ran it is
// absent from the list.
std::vector<CollectivePeer> collectivePeers(const EventStore& store, int rank, int32_t index);

}  // namespace shardscope

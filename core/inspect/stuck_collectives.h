// The collectives an ended run is stuck in: a rank's last collective on its
// lane that some ranks of its group entered (an event with that group and
// sequence number) while others never did. Read from the events alone, so an
// opened trace of a hung run shows them too. A live run's store lacks the
// collectives still in flight, so callers ask only once the run has ended.
// In an imported trace, ranks with no events (not in its files) are waited for by no one.
// No widgets.
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope {

class EventStore;

struct StuckCollective {
  int rank = 0;          // a rank waiting in it
  int32_t event = -1;    // index into store.events(rank)
  int64_t begin_ns = 0;  // when it entered
  int64_t until_ns = 0;  // where the run stopped (never before begin_ns + 1)
  std::vector<int> waiting_for;  // the group's ranks that never entered it
};

// Every stuck collective of every waiting rank, by rank then time.
std::vector<StuckCollective> findStuckCollectives(const EventStore& store);

}  // namespace shardscope

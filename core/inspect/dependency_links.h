// Dependency arrows for the timeline: for one selected op, the ops it waited
// on or was launched by (its `dep`) and the ops that name it as theirs — a
// bucket's ready → its all-reduce launch, a unit's all-gather → the compute
// that waits for it, a backward → the reduce-scatter it launches. Op ids are
// per rank, so links stay within the selected op's rank. No widgets, no Qt.
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope {

class EventStore;

struct DependencyLink {
  int32_t from = -1;  // index into store.events(rank): the op that came first
  int32_t to = -1;    // the op that waited for it or was launched by it
};

// Links into and out of events(rank)[index]; empty when it has no op id.
std::vector<DependencyLink> dependencyLinks(const EventStore& store, int rank, int32_t index);

}  // namespace shardscope

// Each collective of one rank's step and how much of it no compute covered
// ("exposed", HTA's definition: the collective's time minus its overlap with
// the union of the rank's compute), in the order the collectives ran; and
// the same summed per FSDP unit (module). For an imported PyTorch job this
// is the DDP all-reduce firing order and the table of which FSDP module's
// all-gather was exposed, by how much. No widgets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/event.h"

namespace shardscope {

class EventStore;

struct CollectiveExposure {
  int32_t event = -1;  // index into store.events(rank)
  EventKind kind = EventKind::AllReduce;
  int unit = -1;
  int64_t bytes = 0;
  int64_t begin_ns = 0, dur_ns = 0, exposed_ns = 0;
};

struct UnitExposure {
  int unit = -1;
  std::string name;  // the module ("layers.3", "root"), or "unit N"
  EventKind kind = EventKind::AllGather;
  int count = 0;
  int64_t bytes = 0, time_ns = 0, exposed_ns = 0;
};

// The rank's collectives of step (by start), with their exposed time.
std::vector<CollectiveExposure> collectiveExposure(const EventStore& store, int rank, int step);
// Summed per (unit, kind), units in first-seen order; collectives without a unit are left out.
std::vector<UnitExposure> unitExposure(const EventStore& store, const std::vector<CollectiveExposure>& collectives);

}  // namespace shardscope

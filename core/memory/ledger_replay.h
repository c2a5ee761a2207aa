// Rebuilds a rank's memory ledger from its alloc/free events in time order.
// A modeled run records allocations in the order threads happened to run, not
// in modeled time; sorting and replaying gives the running totals and peaks a
// modeled timeline implies — deterministic, like the rest of that timeline.
#pragma once

#include <vector>

#include "memory/memory_ledger.h"
#include "trace/event.h"

namespace shardscope {

// Deterministic total order: by begin time, then lane, kind and ids.
void sortEvents(std::vector<Event>& events);
// events must be sorted; rewrites each Alloc/Free event's `value` (running
// bytes of its category) and returns the replayed books.
LedgerSnapshot replayLedger(std::vector<Event>& events);

}  // namespace shardscope

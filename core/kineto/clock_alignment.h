// Clocks of a job's hosts: ranks of one host share a clock (the trace's
// distributedInfo.hostname says which host); another host's clock is put on
// the first host's by the ends of collectives both took part in (a collective
// ends together on all its ranks): the median offset, and as its residual
// uncertainty the largest distance of any one collective's offset from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kineto/collective_match.h"
#include "kineto/trace_set.h"

namespace shardscope::kineto {

struct HostClock {
  std::string host;        // "" when the traces name none
  std::vector<int> ranks;  // its ranks
  int64_t offset_ns = 0;   // added to its ranks' absolute times to put them on the first host's clock
  int64_t residual_ns = 0;  // the largest |one collective's offset - offset_ns|
  int64_t collectives = 0;  // matched collectives it shares with the first host
  bool aligned = true;      // false: no collective shared with the first host, its clock is taken as is
};

struct HostClocks {
  bool hosts_named = false;        // some trace named its host; otherwise all are taken as one host
  std::vector<HostClock> hosts;    // the first host (the lowest rank's) first
  std::vector<size_t> host_of;     // by rank index: index into hosts
  // A rank's time on the common clock: its absolute ns plus its host's offset.
  int64_t commonNs(const TraceSet& set, size_t rank_index, int64_t ts_ns) const {
    return set.ranks[rank_index].absoluteNs(ts_ns) + hosts[host_of[rank_index]].offset_ns;
  }
};

HostClocks alignHostClocks(const TraceSet& set, const CollectiveMatch& match);

}  // namespace shardscope::kineto

#include "engine/comm_latency.h"

#include <numeric>

namespace shardscope {

CommLatency dataParallelCommLatency(const RunTrace& trace, const CostModel& cost, int rank, int step) {
  CommLatency out;
  if (rank < 0 || static_cast<size_t>(rank) >= trace.events.size()) return out;
  std::vector<int> world(static_cast<size_t>(trace.ranks));
  std::iota(world.begin(), world.end(), 0);
  for (const Event& e : trace.events[static_cast<size_t>(rank)]) {
    if (e.step != step || e.lane == Lane::Compute || !isCollective(e.kind)) continue;
    const CommGroup* g = trace.group(e.group);
    const std::vector<int>& members = g && !g->ranks.empty() ? g->ranks : world;
    out.latency_ns += cost.latencyNs(e.kind, members);
    out.transfer_ns += e.end_ns - e.begin_ns - e.value;
    ++out.collectives;
  }
  return out;
}

}  // namespace shardscope

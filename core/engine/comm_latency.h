// How much of a rank's data-parallel collective time is the links' per-message
// latency rather than bandwidth (modeled clock): the figure that says when
// collectives are too small to reach bandwidth (tiny FSDP units, TP at scale).
#pragma once

#include <cstdint>

#include "rank/cost_model.h"
#include "trace/run_trace.h"

namespace shardscope {

struct CommLatency {
  int64_t latency_ns = 0;   // latency × ring steps, summed over the collectives
  int64_t transfer_ns = 0;  // their spans less the wait for peers
  int collectives = 0;
  double share() const { return transfer_ns > 0 ? double(latency_ns) / double(transfer_ns) : 0.0; }
};

// The all-gathers, reduce-scatters and all-reduces `rank` ran off its compute
// lane in `step` (tensor parallelism's all-reduces block the compute lane and
// are not data-parallel traffic), priced by `cost`'s links.
CommLatency dataParallelCommLatency(const RunTrace& trace, const CostModel& cost, int rank, int step);

}  // namespace shardscope

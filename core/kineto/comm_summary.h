// Per-rank communication figures over the events HTA's metrics look at:
// bytes and bandwidth per collective kind (busbw with each collective's own
// group size, nccl-tests' definitions), and the communication kernels least
// hidden by computation ("exposed": the part of a kernel's time no merged
// computation kernel covers).
#pragma once

#include <cstdint>
#include <vector>

#include "kineto/hta_metrics.h"
#include "kineto/trace_index.h"

namespace shardscope::kineto {

struct CollectiveKindSummary {
  Collective kind = Collective::Unknown;
  int64_t count = 0;
  int64_t sized = 0;      // how many had a known size (elements and dtype)
  int64_t sized_from_dims = 0;  // of those, sized from Input Dims x Input type (older traces)
  int64_t bytes = 0;      // sum over the sized ones
  int64_t time_ns = 0;    // sum of all their durations
  double algbw_gbps = 0;  // sized bytes / their time, 1e9 bytes/s
  double busbw_gbps = 0;  // sum(bytes x factor(group)) / their time
  int32_t group_size = -1;  // when all share one; -1 unknown, -2 mixed
  int64_t coalesced_groups = 0;  // of count: coalesced groups (TraceCollective::coalesced), each counted once
  int64_t coalesced_ops = 0;     // the point-to-point ops batched in them
};

struct ExposedComm {
  uint32_t event = kNone;
  Collective kind = Collective::Unknown;
  int64_t ts_ns = 0, dur_ns = 0, exposed_ns = 0;
  int64_t bytes = -1;
};

struct CommSummary {
  std::vector<CollectiveKindSummary> kinds;  // by time, largest first
  std::vector<ExposedComm> longest_exposed;  // up to `top`, largest exposed first
};

CommSummary summarizeCommunication(const RankTrace& trace, const TraceIndex& index, const HtaSelection& selection,
                                   size_t top = 10);

}  // namespace shardscope::kineto

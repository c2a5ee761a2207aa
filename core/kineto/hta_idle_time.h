// HTA's idle-time breakdown per CUDA stream (hta/analyzers/breakdown_analysis.py
// get_idle_time_breakdown, _analyze_idle_time_for_stream): on each stream, the
// GPU events sorted by start; each one's gap ts - (previous event's end) is
//   host_wait    when its launch (the host event of its correlation) started
//                after the previous event ended: the CPU was late to enqueue;
//   kernel_wait  otherwise, when the gap is under consecutive_kernel_delay
//                (HTA's default 30, in its frame's µs): launch overhead;
//   other        otherwise (waiting on an event, another stream, ...).
// Gaps are summed as HTA sums them: a negative gap (rounded sub-µs events)
// counts as it is; the first event's gap is none.
#pragma once

#include <cstdint>
#include <vector>

#include "kineto/hta_correlation.h"
#include "kineto/hta_metrics.h"

namespace shardscope::kineto {

inline constexpr int64_t kHtaConsecutiveKernelDelayNs = 30'000;

struct HtaStreamIdleTime {
  int32_t stream = -1;
  int64_t kernels = 0;  // GPU events on the stream
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
  // Gaps before an event whose launch is not among the kept host events
  // (no correlation, or its launch is missing): never host_wait, as in HTA.
  int64_t without_launch = 0;

  int64_t idleNs() const { return host_wait_ns + kernel_wait_ns + other_ns; }
  // HTA's idle_time_ratio: part / idle; NaN when idle is 0.
  double ratio(int64_t part_ns) const;
};

struct HtaIdleTimeBreakdown {
  int64_t consecutive_kernel_delay_ns = kHtaConsecutiveKernelDelayNs;
  std::vector<HtaStreamIdleTime> streams;  // by stream number
};

HtaIdleTimeBreakdown computeHtaIdleTime(const RankTrace& trace, const HtaSelection& selection,
                                        const HtaCorrelations& correlations,
                                        int64_t consecutive_kernel_delay_ns = kHtaConsecutiveKernelDelayNs);

}  // namespace shardscope::kineto

// Launches and GPU events paired by Kineto's correlation id, as HTA's analyses
// pair them (hta/common/trace.py transform_correlation_to_index; trace_filter.py
// CPUOperatorFilter: stream == -1, GPUKernelFilter: stream > 0), over the events
// HTA keeps (selectHtaKernels). What cannot pair is counted, never guessed:
// a kernel without a correlation, one whose launch is not in the kept events,
// a launch without a correlation or without a kernel.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "kineto/hta_metrics.h"

namespace shardscope::kineto {

// HTA's CUDA (and ROCm, MTIA) calls that enqueue work on a stream:
// trace_symbol_table.py get_runtime_launch_events_mask.
bool htaIsLaunchCall(std::string_view name);

// HTA pairs every host event of a correlation with every GPU event of it; a
// correlation shared by more pairs than this (a corrupt or adversarial trace,
// never Kineto's one launch per kernel) is left out of the pairings and
// counted, so a bad file cannot make the pairing quadratic.
inline constexpr int64_t kHtaMaxPairsPerCorrelation = 64;

struct HtaCorrelationCheck {
  int64_t kernels = 0;                      // kept GPU events (stream != -1)
  int64_t kernels_without_correlation = 0;  // no args.correlation
  int64_t kernels_without_launch = 0;       // a correlation no kept host event has
  int64_t launches = 0;                     // kept host events that are htaIsLaunchCall
  int64_t launches_without_correlation = 0;
  int64_t launches_without_kernel = 0;      // a correlation no kept GPU event has
  int64_t crowded_correlations = 0;         // over kHtaMaxPairsPerCorrelation pairs: left out
};

struct HtaCorrelations {
  using Entry = std::pair<int64_t, uint32_t>;  // (correlation, index into host_calls or kernels)
  std::vector<Entry> host, gpu;                // sorted; correlation -1 left out
  std::vector<uint8_t> host_is_launch;         // per host call: htaIsLaunchCall(its name)
  HtaCorrelationCheck check;

  std::span<const Entry> hostsOf(int64_t correlation) const { return range(host, correlation); }
  std::span<const Entry> gpusOf(int64_t correlation) const { return range(gpu, correlation); }
  // More than kHtaMaxPairsPerCorrelation host x GPU pairs share it.
  bool crowded(int64_t correlation) const;

 private:
  static std::span<const Entry> range(const std::vector<Entry>& v, int64_t correlation);
};

HtaCorrelations pairHtaCorrelations(const RankTrace& trace, const HtaSelection& selection);

}  // namespace shardscope::kineto

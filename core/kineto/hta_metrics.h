// Holistic Trace Analysis' per-rank metrics, computed as HTA computes them:
//   event selection   hta/common/trace_parser.py, hta/common/trace.py
//     - events without dur or cat, and cat "Trace", are dropped (_compress_df);
//     - if any ts of the file is a float, ts is rounded up and ts+dur down to
//       whole microseconds, in the doubles pandas holds (round_down_time_stamps);
//     - with two or more distinct ProfilerStep#N names, host events starting at
//       or after the last step's start are dropped, and GPU events (stream >= 0
//       and correlation >= 0, or "Event Sync"/"Context Sync") are kept only when
//       a kept host event has their correlation (_filter_irrelevant_gpu_kernels);
//     - the metrics look at the kept events with stream != -1.
//   temporal breakdown  hta/analyzers/breakdown_analysis.py get_temporal_breakdown
//   comm/comp overlap   hta/analyzers/communication_analysis.py get_comm_comp_overlap
//   kernel-type time    breakdown_analysis.py _get_gpu_kernel_type_time, with memory kernels
//                       (each segment truncated to whole µs: its .astype(int))
// With whole_trace the number-changing rules are off: every event, exact ns.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kineto/hta_rules.h"
#include "kineto/kineto_trace.h"

namespace shardscope::kineto {

struct HtaOptions {
  bool whole_trace = false;
  int64_t critical_path_step = -1;  // analyze --critical-path-step (critical_path.h); -1: the default
  int critical_path_rank = -1;      // analyze --critical-path-rank; -1: the default
};

// One GPU event as HTA's metrics see it (after rounding and filtering).
struct HtaKernel {
  int64_t ts_ns = 0, end_ns = 0;
  uint32_t event = kNone;
  HtaKernelType type = HtaKernelType::Computation;
};

// A kept host event (stream -1) that has a correlation or is a CUDA runtime /
// driver call: the launch side of HTA's correlation-based analyses (hta_correlation.h).
struct HtaHostCall {
  int64_t ts_ns = 0, end_ns = 0;  // after the same rounding as the kernels
  uint32_t event = kNone;
};

struct HtaSelection {
  std::vector<HtaKernel> kernels;  // by event order
  std::vector<HtaHostCall> host_calls;  // by event order
  bool rounded = false;            // the float-timestamp rule applied
  bool last_step_dropped = false;  // the last-ProfilerStep rule applied
  // HTA's kernel-type table casts each segment's µs to int (truncates):
  // matters when durations keep fractions that the float rule did not round
  // (integer ts, fractional dur). Off with whole_trace.
  bool truncate_type_segments = false;
};

struct Interval {
  int64_t ts, end;
};

struct HtaRankMetrics {
  int64_t kernel_time_ns = 0, idle_ns = 0, compute_ns = 0, non_compute_ns = 0;
  int64_t comm_ns = 0, overlap_ns = 0;  // merged communication time, its part under computation
  double idle_pct = 0, compute_pct = 0, non_compute_pct = 0;
  double overlap_pct = 0;  // NaN when there is no communication
  bool has_kernels = false;
  std::vector<std::pair<std::string, int64_t>> kernel_type_ns;  // "COMPUTATION overlapping COMMUNICATION" -> ns
};

// multi_step: whether the job as a whole (all ranks) has two or more ProfilerStep#N names.
HtaSelection selectHtaKernels(const RankTrace& trace, bool multi_step, const HtaOptions& options);
bool hasMultipleProfilerSteps(const std::vector<const RankTrace*>& traces);

// HTA's merge_kernel_intervals: sort by ts; an interval starting after every
// earlier end opens a new group.
std::vector<Interval> mergeIntervals(std::vector<Interval> v);
std::vector<Interval> mergedOfType(const HtaSelection& s, HtaKernelType type);

HtaRankMetrics computeHtaMetrics(const HtaSelection& selection);

}  // namespace shardscope::kineto

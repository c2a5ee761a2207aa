// HTA's kernel breakdown per rank (hta/analyzers/breakdown_analysis.py
// get_gpu_kernel_breakdown, _aggr_gpu_kernel_time; TraceAnalysis passes
// include_memory_kernels=True): per kernel type (COMPUTATION, COMMUNICATION,
// MEMORY by hta_rules.h), the kept GPU events grouped by name: sum, max, min,
// mean, std (sample; 0 for one) of their durations, by sum descending. With
// more than num_kernels names, a name stays only while its running total of
// sums is <= the duration_ratio quantile of those running totals and it is
// among the first num_kernels; the rest become "others". HTA then groups the
// rows again over their *sums*: a kept name's max = min = mean = its sum and
// std 0, and "others" has the sum, max, min, mean, std of its names' sums.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kineto/hta_metrics.h"
#include "kineto/hta_rules.h"

namespace shardscope::kineto {

inline constexpr int kHtaBreakdownKernels = 10;          // num_kernels
inline constexpr double kHtaBreakdownDurationRatio = 0.8;  // duration_ratio

struct HtaKernelRow {
  std::string name;  // "others" for the grouped rest
  int64_t names = 1;    // kernel names in the row
  int64_t kernels = 0;  // GPU events in the row
  double sum_ns = 0, max_ns = 0, min_ns = 0, mean_ns = 0, std_ns = 0;  // as HTA's table has them
};

struct HtaKernelTypeBreakdown {
  HtaKernelType type = HtaKernelType::Computation;
  bool grouped = false;  // more than num_kernels names: HTA's second grouping applied
  std::vector<HtaKernelRow> rows;  // by sum descending, ties by name; "others" last
};

struct HtaKernelBreakdown {
  std::vector<HtaKernelTypeBreakdown> types;  // COMPUTATION, COMMUNICATION, MEMORY (those with kernels)
};

HtaKernelBreakdown computeHtaKernelBreakdown(const RankTrace& trace, const HtaSelection& selection,
                                             int num_kernels = kHtaBreakdownKernels,
                                             double duration_ratio = kHtaBreakdownDurationRatio);

}  // namespace shardscope::kineto

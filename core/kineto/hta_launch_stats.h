// HTA's CUDA kernel launch statistics (hta/analyzers/cuda_kernel_analysis.py
// cuda_kernel_launch_stats): every kept host event (stream -1) paired with
// every kept GPU event (stream != -1) of a correlation that a cudaLaunchKernel,
// cudaMemcpyAsync or cudaMemsetAsync has; per pair cpu_duration, gpu_duration
// and HTA's launch_delay = gpu ts - cpu ts + cpu dur (its formula as written;
// the time from the launch's end to the GPU start, gpu ts - (cpu ts + cpu
// dur), is given beside it as start_delay). Outliers use HTA's defaults:
// runtime_cutoff 50 µs, launch_delay_cutoff 100 µs. Unlike HTA, a launch
// without a correlation (-1) pairs with nothing: it is counted instead.
#pragma once

#include <cstdint>

#include "kineto/hta_correlation.h"
#include "kineto/hta_describe.h"

namespace shardscope::kineto {

inline constexpr int64_t kHtaRuntimeCutoffNs = 50'000;
inline constexpr int64_t kHtaLaunchDelayCutoffNs = 100'000;

struct HtaLaunchStats {
  int64_t pairs = 0;
  HtaStats cpu_duration, gpu_duration, launch_delay, start_delay;  // ns
  int64_t runtime_outliers = 0;       // cpu_duration > runtime_cutoff
  int64_t launch_delay_outliers = 0;  // launch_delay > launch_delay_cutoff
  int64_t short_kernels = 0;          // cpu_duration <= runtime_cutoff and gpu_duration < cpu_duration
  HtaCorrelationCheck check;          // what could not pair
};

HtaLaunchStats computeHtaLaunchStats(const RankTrace& trace, const HtaSelection& selection,
                                     const HtaCorrelations& correlations);

}  // namespace shardscope::kineto

// HTA's CUDA kernel launch statistics (hta/analyzers/cuda_kernel_analysis.py
// cuda_kernel_launch_stats): every kept host event (stream -1) paired with
// every kept GPU event (stream != -1) of a correlation that one of HTA's
// launch calls has (htaIsLaunchCall: cudaLaunchKernelExC, cuLaunchKernel, ...
// included); per pair cpu_duration, gpu_duration and the launch delay as HTA
// defines it since January 2025, max(0, gpu ts - (cpu ts + cpu dur))
// (kHtaLaunchDelayFormula); the unclamped gpu ts - (cpu ts + cpu dur) is
// given beside it as start_delay. Outliers use HTA's defaults: runtime_cutoff
// 50 µs, launch_delay_cutoff 100 µs. A launch without a correlation pairs with nothing: it is counted.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kineto/hta_correlation.h"
#include "kineto/hta_describe.h"

namespace shardscope::kineto {

inline constexpr int64_t kHtaRuntimeCutoffNs = 50'000;
inline constexpr int64_t kHtaLaunchDelayCutoffNs = 100'000;
// How the launch delay is computed, and whose definition it is: printed beside the figures.
inline constexpr const char* kHtaLaunchDelayFormula = "max(0, gpu ts - (cpu ts + cpu dur))";
inline constexpr const char* kHtaLaunchDelaySource = "HTA since January 2025";

// One launch and one of its GPU events, as HTA measures them (ns): the start
// delay gpu ts - (cpu ts + cpu dur), unclamped, and the launch delay
// max(0, start delay) (kHtaLaunchDelayFormula). The annotation breakdown uses the same.
inline int64_t htaStartDelayNs(const HtaHostCall& launch, const HtaKernel& kernel) {
  return kernel.ts_ns - launch.end_ns;
}
inline int64_t htaLaunchDelayNs(const HtaHostCall& launch, const HtaKernel& kernel) {
  return std::max<int64_t>(0, htaStartDelayNs(launch, kernel));
}

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

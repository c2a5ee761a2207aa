#include "kineto/hta_correlation.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace shardscope::kineto {

bool htaIsLaunchCall(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kCalls = {
      "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",   "cuLaunchKernelEx",
      "cudaMemcpyAsync",  "cudaMemsetAsync",     "hipLaunchKernel",  "hipExtModuleLaunchKernel",
      "hipMemcpyAsync",   "hipMemsetAsync",      "hipMemcpyWithStream",
      "runFunction - job_prep_and_submit_for_execution"};
  return std::find(kCalls.begin(), kCalls.end(), name) != kCalls.end();
}

std::span<const HtaCorrelations::Entry> HtaCorrelations::range(const std::vector<Entry>& v, int64_t correlation) {
  const auto lo = std::lower_bound(v.begin(), v.end(), Entry{correlation, 0});
  // Kineto gives a correlation one launch and one GPU event: look one entry
  // past before searching (a crowded correlation keeps its log-time search).
  if (lo == v.end() || lo->first != correlation) return {lo, lo};
  if (lo + 1 == v.end() || (lo + 1)->first != correlation) return {lo, lo + 1};
  const auto hi = std::upper_bound(lo + 1, v.end(), Entry{correlation, UINT32_MAX});
  return {lo, hi};
}

bool HtaCorrelations::crowded(int64_t correlation) const {
  const auto hosts = hostsOf(correlation);
  return !hosts.empty() && int64_t(hosts.size()) * int64_t(gpusOf(correlation).size()) > kHtaMaxPairsPerCorrelation;
}

HtaCorrelations pairHtaCorrelations(const RankTrace& t, const HtaSelection& s) {
  HtaCorrelations c;
  c.host_is_launch.resize(s.host_calls.size(), 0);
  for (uint32_t i = 0; i < s.host_calls.size(); ++i) {
    const TraceEvent& e = t.events[s.host_calls[i].event];
    c.host_is_launch[i] = htaIsLaunchCall(t.str(e.name)) ? 1 : 0;
    if (e.correlation != -1) c.host.push_back({e.correlation, i});
  }
  for (uint32_t i = 0; i < s.kernels.size(); ++i) {
    const TraceEvent& e = t.events[s.kernels[i].event];
    if (e.correlation != -1) c.gpu.push_back({e.correlation, i});
  }
  // Correlations rise with time, so these are often in order already.
  if (!std::is_sorted(c.host.begin(), c.host.end())) std::sort(c.host.begin(), c.host.end());
  if (!std::is_sorted(c.gpu.begin(), c.gpu.end())) std::sort(c.gpu.begin(), c.gpu.end());

  // The counts by walking the two sorted lists side by side, one pass each,
  // not a binary search per event (a search's cache misses showed in profiles).
  HtaCorrelationCheck& k = c.check;
  k.kernels = int64_t(s.kernels.size());
  k.kernels_without_correlation = k.kernels - int64_t(c.gpu.size());
  for (size_t g = 0, h = 0; g < c.gpu.size(); ++g) {
    while (h < c.host.size() && c.host[h].first < c.gpu[g].first) ++h;
    if (h == c.host.size() || c.host[h].first != c.gpu[g].first) ++k.kernels_without_launch;
  }
  for (uint32_t i = 0; i < s.host_calls.size(); ++i) {
    if (!c.host_is_launch[i]) continue;
    ++k.launches;
    if (t.events[s.host_calls[i].event].correlation == -1) ++k.launches_without_correlation;
  }
  // Per correlation the host entries share: launches without a kernel, and crowded ones.
  for (size_t i = 0, g = 0; i < c.host.size();) {
    const int64_t correlation = c.host[i].first;
    size_t j = i;
    while (j < c.host.size() && c.host[j].first == correlation) ++j;
    while (g < c.gpu.size() && c.gpu[g].first < correlation) ++g;
    size_t gpus = 0;
    while (g + gpus < c.gpu.size() && c.gpu[g + gpus].first == correlation) ++gpus;
    if (gpus == 0)
      for (size_t h = i; h < j; ++h) k.launches_without_kernel += c.host_is_launch[c.host[h].second];
    if (int64_t(j - i) * int64_t(gpus) > kHtaMaxPairsPerCorrelation) ++k.crowded_correlations;
    i = j;
  }
  return c;
}

}  // namespace shardscope::kineto

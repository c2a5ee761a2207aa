#include "kineto/hta_launch_stats.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace shardscope::kineto {

HtaLaunchStats computeHtaLaunchStats(const RankTrace& t, const HtaSelection& s, const HtaCorrelations& c) {
  HtaLaunchStats out;
  out.check = c.check;
  std::unordered_set<int64_t> ids;  // HTA's merged_series, less -1
  for (const HtaHostCall& h : s.host_calls) {
    const TraceEvent& e = t.events[h.event];
    if (e.correlation != -1 && htaIsLaunchCall(t.str(e.name))) ids.insert(e.correlation);
  }
  std::vector<double> cpu, gpu, delay, start;
  // pd.merge(cpu, gpu, on="correlation", how="inner"): every pair of one id.
  for (size_t i = 0; i < c.host.size();) {
    size_t j = i;
    while (j < c.host.size() && c.host[j].first == c.host[i].first) ++j;
    const int64_t id = c.host[i].first;
    if (ids.count(id) && !c.crowded(id)) {
      for (size_t h = i; h < j; ++h) {
        const HtaHostCall& call = s.host_calls[c.host[h].second];
        for (const auto& g : c.gpusOf(id)) {
          const HtaKernel& k = s.kernels[g.second];
          const int64_t cpu_dur = call.end_ns - call.ts_ns, gpu_dur = k.end_ns - k.ts_ns;
          const int64_t start_delay = htaStartDelayNs(call, k);
          const int64_t launch_delay = htaLaunchDelayNs(call, k);
          cpu.push_back(double(cpu_dur));
          gpu.push_back(double(gpu_dur));
          delay.push_back(double(launch_delay));
          start.push_back(double(start_delay));
          if (cpu_dur > kHtaRuntimeCutoffNs) ++out.runtime_outliers;
          if (launch_delay > kHtaLaunchDelayCutoffNs) ++out.launch_delay_outliers;
          if (cpu_dur <= kHtaRuntimeCutoffNs && gpu_dur < cpu_dur) ++out.short_kernels;
        }
      }
    }
    i = j;
  }
  out.pairs = static_cast<int64_t>(cpu.size());
  out.cpu_duration = describeValues(std::move(cpu));
  out.gpu_duration = describeValues(std::move(gpu));
  out.launch_delay = describeValues(std::move(delay));
  out.start_delay = describeValues(std::move(start));
  return out;
}

}  // namespace shardscope::kineto

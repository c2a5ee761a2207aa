#include "kineto/hta_idle_time.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

namespace shardscope::kineto {

double HtaStreamIdleTime::ratio(int64_t part_ns) const {
  const int64_t idle = idleNs();
  return idle == 0 ? std::numeric_limits<double>::quiet_NaN() : double(part_ns) / double(idle);
}

HtaIdleTimeBreakdown computeHtaIdleTime(const RankTrace& t, const HtaSelection& s, const HtaCorrelations& c,
                                        int64_t delay_ns) {
  HtaIdleTimeBreakdown out;
  out.consecutive_kernel_delay_ns = delay_ns;
  std::map<int32_t, std::vector<uint32_t>> by_stream;  // kernel indices, by event order
  for (uint32_t i = 0; i < s.kernels.size(); ++i) by_stream[t.events[s.kernels[i].event].stream].push_back(i);

  // ts_runtime: HTA joins a GPU event (stream > 0) to the host event that
  // shares its correlation (index_correlation; with several, the last one
  // written wins its assignment). Stream-0 events and unpaired ones have none.
  const auto launchTs = [&](const HtaKernel& k) -> std::optional<int64_t> {
    const TraceEvent& e = t.events[k.event];
    if (e.stream <= 0 || e.correlation == -1) return std::nullopt;
    const auto hosts = c.hostsOf(e.correlation);
    if (hosts.empty()) return std::nullopt;
    return s.host_calls[hosts.back().second].ts_ns;
  };

  for (auto& [stream, idx] : by_stream) {
    std::stable_sort(idx.begin(), idx.end(),
                     [&](uint32_t a, uint32_t b) { return s.kernels[a].ts_ns < s.kernels[b].ts_ns; });
    HtaStreamIdleTime st;
    st.stream = stream;
    st.kernels = static_cast<int64_t>(idx.size());
    for (size_t n = 1; n < idx.size(); ++n) {
      const HtaKernel& k = s.kernels[idx[n]];
      const int64_t prev_end = s.kernels[idx[n - 1]].end_ns;
      const int64_t gap = k.ts_ns - prev_end;
      const std::optional<int64_t> launch = launchTs(k);
      if (!launch) ++st.without_launch;
      if (launch && *launch > prev_end) st.host_wait_ns += gap;
      else if (gap < delay_ns) st.kernel_wait_ns += gap;
      else st.other_ns += gap;
    }
    out.streams.push_back(st);
  }
  return out;
}

}  // namespace shardscope::kineto

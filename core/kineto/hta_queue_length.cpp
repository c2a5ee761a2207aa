#include "kineto/hta_queue_length.h"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace shardscope::kineto {

HtaQueueLength computeHtaQueueLength(const RankTrace& t, const HtaSelection& s, const HtaCorrelations& c) {
  struct Row {
    int64_t ts;
    int32_t stream;
    int delta;
  };
  std::vector<Row> rows;
  HtaQueueLength out;
  std::unordered_set<int64_t> launched;  // correlations of the counted launches
  for (uint32_t i = 0; i < s.host_calls.size(); ++i) {
    if (!c.host_is_launch[i]) continue;
    const TraceEvent& e = t.events[s.host_calls[i].event];
    if (e.correlation == -1 || c.crowded(e.correlation)) continue;
    const auto gpus = c.gpusOf(e.correlation);
    // index_correlation > 0: HTA pairs a launch only with a GPU event on a stream > 0.
    if (std::none_of(gpus.begin(), gpus.end(),
                     [&](const auto& g) { return t.events[s.kernels[g.second].event].stream > 0; }))
      continue;
    ++out.launches;
    launched.insert(e.correlation);
    for (const auto& g : gpus) rows.push_back({s.host_calls[i].ts_ns, t.events[s.kernels[g.second].event].stream, +1});
  }
  for (const HtaKernel& k : s.kernels) {
    const TraceEvent& e = t.events[k.event];
    if (e.correlation != -1 && launched.count(e.correlation)) rows.push_back({k.ts_ns, e.stream, -1});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ts < b.ts; });
  std::map<int32_t, std::pair<int64_t, std::vector<double>>> running;  // stream -> (sum, values)
  for (const Row& r : rows) {
    auto& [sum, values] = running[r.stream];
    sum += r.delta;
    values.push_back(double(sum));
  }
  for (auto& [stream, sv] : running) out.streams.push_back({stream, describeValues(std::move(sv.second))});
  return out;
}

}  // namespace shardscope::kineto

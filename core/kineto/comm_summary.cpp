#include "kineto/comm_summary.h"

#include <algorithm>
#include <map>

namespace shardscope::kineto {

namespace {

// Time of [ts, end) covered by merged (sorted, disjoint) intervals.
int64_t coveredTime(const std::vector<Interval>& merged, int64_t ts, int64_t end) {
  auto it = std::upper_bound(merged.begin(), merged.end(), ts, [](int64_t t, const Interval& i) { return t < i.end; });
  int64_t covered = 0;
  for (; it != merged.end() && it->ts < end; ++it) covered += std::max<int64_t>(0, std::min(end, it->end) - std::max(ts, it->ts));
  return covered;
}

}  // namespace

CommSummary summarizeCommunication(const RankTrace& t, const TraceIndex& idx, const HtaSelection& sel, size_t top) {
  CommSummary out;
  std::map<Collective, CollectiveKindSummary> kinds;
  std::map<Collective, double> weighted;  // sum of bytes x bus factor
  const auto add = [&](const TraceCollective& c, int64_t dur) {
    CollectiveKindSummary& k = kinds[c.kind];
    if (k.count == 0) k.group_size = c.group_size;
    else if (k.group_size != c.group_size) k.group_size = -2;
    k.kind = c.kind;
    ++k.count;
    k.time_ns += dur;
    if (c.coalesced) {
      ++k.coalesced_groups;
      k.coalesced_ops += c.coalesced_ops;
    }
    if (c.bytes >= 0) {
      ++k.sized;
      if (c.bytes_from_dims) ++k.sized_from_dims;
      k.bytes += c.bytes;
      // A group size the trace does not give: busbw is reported as algbw (factor 1), as before the
      // factors moved to common/collective.h, whose table knows only real groups.
      weighted[c.kind] += double(c.bytes) * (c.group_size > 0 ? busBandwidthFactor(c.kind, c.group_size) : 1.0);
    }
  };
  std::map<Collective, int64_t> sized_time;
  const std::vector<Interval> comp = mergedOfType(sel, HtaKernelType::Computation);
  bool any_kernel = false;
  for (const HtaKernel& k : sel.kernels) {
    const uint32_t ci = idx.collective_of_event.empty() ? kNone : idx.collective_of_event[k.event];
    if (ci == kNone) continue;
    any_kernel = true;
    const TraceCollective& c = idx.collectives[ci];
    const int64_t dur = k.end_ns - k.ts_ns;
    add(c, dur);
    if (c.bytes >= 0) sized_time[c.kind] += dur;
    if (k.type == HtaKernelType::Communication)
      out.longest_exposed.push_back({k.event, c.kind, k.ts_ns, dur, dur - coveredTime(comp, k.ts_ns, k.end_ns), c.bytes});
  }
  if (!any_kernel) {  // host-only collectives (Gloo): their op spans, all of the trace
    for (const TraceCollective& c : idx.collectives) {
      if (c.kernel != kNone) continue;
      add(c, c.dur_ns);
      if (c.bytes >= 0) sized_time[c.kind] += c.dur_ns;
    }
  }
  for (auto& [kind, k] : kinds) {
    const int64_t ns = sized_time[kind];
    if (ns > 0) {
      k.algbw_gbps = double(k.bytes) / double(ns);  // bytes per ns = GB/s
      k.busbw_gbps = weighted[kind] / double(ns);
    }
    out.kinds.push_back(k);
  }
  std::sort(out.kinds.begin(), out.kinds.end(),
            [](const auto& a, const auto& b) { return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.kind < b.kind; });
  std::stable_sort(out.longest_exposed.begin(), out.longest_exposed.end(), [](const ExposedComm& a, const ExposedComm& b) {
    return a.exposed_ns != b.exposed_ns ? a.exposed_ns > b.exposed_ns : a.ts_ns < b.ts_ns;
  });
  if (out.longest_exposed.size() > top) out.longest_exposed.resize(top);
  (void)t;
  return out;
}

}  // namespace shardscope::kineto

#include "kineto/clock_alignment.h"

#include <algorithm>
#include <map>

namespace shardscope::kineto {

namespace {

// The median of an unsorted list (for an even count the mean of the middle
// two, rounded down); 0 for none.
int64_t clockMedian(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n % 2) return v[n / 2];
  return v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;  // sorted: the difference is >= 0, rounds down
}

}  // namespace

HostClocks alignHostClocks(const TraceSet& set, const CollectiveMatch& match) {
  HostClocks clocks;
  std::map<std::string, size_t> by_name;
  clocks.host_of.resize(set.ranks.size());
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    const std::string& name = set.ranks[r].hostname;
    clocks.hosts_named |= !name.empty();
    const auto [it, fresh] = by_name.emplace(name, clocks.hosts.size());
    if (fresh) clocks.hosts.push_back({name, {}, 0, 0, 0, true});
    clocks.hosts[it->second].ranks.push_back(set.ranks[r].rank);
    clocks.host_of[r] = it->second;
  }
  // Per other host, each shared collective's offset: the mean end on the first
  // host minus the mean end on this one (ns, absolute clocks).
  std::vector<std::vector<int64_t>> offsets(clocks.hosts.size());
  for (const MatchedCollective& mc : match.collectives) {
    // Sums of ends relative to the first entry's end: epoch nanoseconds of several ranks overflow int64.
    std::vector<int64_t> sum(clocks.hosts.size(), 0), count(clocks.hosts.size(), 0);
    int64_t base = 0;
    for (const CollectiveEntry& e : mc.entries) {
      const TraceCollective& c = set.indexes[e.rank_index].collectives[e.collective];
      const int64_t end = set.ranks[e.rank_index].absoluteNs(c.ts_ns + c.dur_ns);
      if (&e == &mc.entries.front()) base = end;
      const size_t h = clocks.host_of[e.rank_index];
      sum[h] += end - base;
      ++count[h];
    }
    if (count[0] == 0) continue;
    for (size_t h = 1; h < clocks.hosts.size(); ++h)
      if (count[h] > 0) offsets[h].push_back(sum[0] / count[0] - sum[h] / count[h]);
  }
  for (size_t h = 1; h < clocks.hosts.size(); ++h) {
    HostClock& hc = clocks.hosts[h];
    hc.collectives = static_cast<int64_t>(offsets[h].size());
    hc.aligned = !offsets[h].empty();
    hc.offset_ns = clockMedian(offsets[h]);
    for (int64_t d : offsets[h]) hc.residual_ns = std::max(hc.residual_ns, d > hc.offset_ns ? d - hc.offset_ns : hc.offset_ns - d);
  }
  return clocks;
}

}  // namespace shardscope::kineto

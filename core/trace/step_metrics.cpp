#include "trace/step_metrics.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/checked_math.h"

namespace shardscope {

namespace {

using Interval = std::pair<int64_t, int64_t>;

std::vector<Interval> unionOf(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second) out.back().second = std::max(out.back().second, i.second);
    else out.push_back(i);
  }
  return out;
}

int64_t length(const std::vector<Interval>& v) {
  int64_t total = 0;
  for (const Interval& i : v) total += i.second - i.first;
  return total;
}

// Both inputs are sorted, disjoint unions.
int64_t overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return total;
}

bool isComputeWork(EventKind k) {
  return k == EventKind::Forward || k == EventKind::Backward || k == EventKind::Loss ||
         k == EventKind::OptimizerStep || k == EventKind::Kernel;
}

}  // namespace

std::vector<StepMetrics> computeStepMetrics(const std::vector<std::vector<Event>>& events_per_rank,
                                           const ImportedSource* imported) {
  std::vector<StepMetrics> out;
  for (size_t rank = 0; rank < events_per_rank.size(); ++rank) {
    struct Acc {
      int64_t begin = -1, end = -1, wait = 0;
      std::vector<Interval> compute, comm;
    };
    std::map<int, Acc> steps;
    // An imported trace's lanes are tracks: compute is what runs on its GPU streams.
    const auto role = [&](const Event& e) {
      if (!imported) return e.lane;
      const ImportedTrack* t = imported->track(static_cast<int>(rank), e.lane);
      return t && t->role != Lane::Host ? Lane::Compute : Lane::Host;
    };
    for (const Event& e : events_per_rank[rank]) {
      if (e.step < 0) continue;
      Acc& a = steps[e.step];
      if (e.kind == EventKind::StepBegin) a.begin = e.begin_ns;
      else if (e.kind == EventKind::StepEnd) a.end = e.end_ns;
      else if (e.kind == EventKind::Wait && e.lane == Lane::Compute) a.wait = saturatingAdd(a.wait, e.end_ns - e.begin_ns);
      else if (imported ? isAnyCollective(e.kind) : isCollective(e.kind)) a.comm.emplace_back(e.begin_ns, e.end_ns);
      else if (isComputeWork(e.kind) && role(e) == Lane::Compute) a.compute.emplace_back(e.begin_ns, e.end_ns);
    }
    for (auto& [step, a] : steps) {
      if (a.begin < 0 || a.end < 0) continue;
      StepMetrics m;
      m.rank = static_cast<int>(rank);
      m.step = step;
      m.wall_ns = a.end - a.begin;
      const auto compute = unionOf(a.compute), comm = unionOf(a.comm);
      m.compute_ns = length(compute);
      m.comm_ns = length(comm);
      m.exposed_comm_ns = m.comm_ns - overlap(comm, compute);
      m.wait_ns = a.wait;
      out.push_back(m);
    }
  }
  return out;
}

double hiddenCommPercent(int64_t comm_ns, int64_t exposed_comm_ns) {
  return comm_ns > 0 ? 100.0 * static_cast<double>(comm_ns - exposed_comm_ns) / static_cast<double>(comm_ns) : 100.0;
}

double StepMetrics::overlapPercent() const { return hiddenCommPercent(comm_ns, exposed_comm_ns); }

double hiddenSharePercent(const std::vector<StepMetrics>& ranks) {
  int64_t comm = 0, exposed = 0;
  for (const StepMetrics& m : ranks) {
    comm = saturatingAdd(comm, m.comm_ns);
    exposed = saturatingAdd(exposed, m.exposed_comm_ns);
  }
  return hiddenCommPercent(comm, exposed);
}

}  // namespace shardscope

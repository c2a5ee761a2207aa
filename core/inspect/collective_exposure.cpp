#include "inspect/collective_exposure.h"

#include <algorithm>
#include <map>
#include <utility>

#include "inspect/event_store.h"

namespace shardscope {

namespace {

bool computes(const EventStore& store, int rank, const Event& e) {
  const bool work = e.kind == EventKind::Forward || e.kind == EventKind::Backward || e.kind == EventKind::Loss ||
                    e.kind == EventKind::OptimizerStep || e.kind == EventKind::Kernel;
  if (!work) return false;
  if (!store.meta().imported) return e.lane == Lane::Compute;
  const ImportedTrack* t = store.meta().imported->track(rank, e.lane);
  return t && t->role != Lane::Host;  // kernels on a GPU stream, not CPU ops
}

}  // namespace

std::vector<CollectiveExposure> collectiveExposure(const EventStore& store, int rank, int step) {
  std::vector<CollectiveExposure> out;
  if (rank < 0 || rank >= store.rankCount()) return out;
  const std::vector<Event>& events = store.events(rank);
  std::vector<std::pair<int64_t, int64_t>> compute;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.step != step) continue;
    if (isAnyCollective(e.kind) && e.end_ns >= e.begin_ns)
      out.push_back({static_cast<int32_t>(i), e.kind, e.unit, e.bytes, e.begin_ns, e.end_ns - e.begin_ns, 0});
    else if (computes(store, rank, e) && e.end_ns > e.begin_ns)
      compute.emplace_back(e.begin_ns, e.end_ns);
  }
  // The union of compute, then each collective's uncovered part.
  std::sort(compute.begin(), compute.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& c : compute) {
    if (!merged.empty() && c.first <= merged.back().second) merged.back().second = std::max(merged.back().second, c.second);
    else merged.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const CollectiveExposure& a, const CollectiveExposure& b) {
    return a.begin_ns < b.begin_ns;
  });
  for (CollectiveExposure& c : out) {
    const int64_t end = c.begin_ns + c.dur_ns;
    int64_t covered = 0;
    auto it = std::lower_bound(merged.begin(), merged.end(), c.begin_ns,
                               [](const std::pair<int64_t, int64_t>& m, int64_t t) { return m.second < t; });
    for (; it != merged.end() && it->first < end; ++it) covered += std::min(end, it->second) - std::max(c.begin_ns, it->first);
    c.exposed_ns = c.dur_ns - std::max<int64_t>(0, covered);
  }
  return out;
}

std::vector<UnitExposure> unitExposure(const EventStore& store, const std::vector<CollectiveExposure>& collectives) {
  std::vector<UnitExposure> out;
  std::map<std::pair<int, int>, size_t> at;
  const auto* imported = store.meta().imported.get();
  for (const CollectiveExposure& c : collectives) {
    if (c.unit < 0) continue;
    const auto [it, fresh] = at.try_emplace({c.unit, static_cast<int>(c.kind)}, out.size());
    if (fresh) {
      UnitExposure u;
      u.unit = c.unit;
      u.kind = c.kind;
      u.name = imported && static_cast<size_t>(c.unit) < imported->unit_names.size()
                   ? imported->unit_names[static_cast<size_t>(c.unit)]
                   : "unit " + std::to_string(c.unit);
      out.push_back(u);
    }
    UnitExposure& u = out[it->second];
    ++u.count;
    u.bytes += c.bytes;
    u.time_ns += c.dur_ns;
    u.exposed_ns += c.exposed_ns;
  }
  return out;
}

}  // namespace shardscope

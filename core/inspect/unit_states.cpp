#include "inspect/unit_states.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "inspect/event_store.h"

namespace shardscope {

namespace {

constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();

struct Interval {
  int64_t begin = 0, end = 0;  // [begin, end); an instant lasts 1 ns so it still shows
  bool backward = false;       // compute ops: a backward
};

struct StepSpan {
  int64_t begin = 0, end = kOpen;  // [StepBegin, StepEnd); open while the step runs
  int step = -1;
};

// One unit's ops on one rank, each list in time order.
struct UnitOps {
  std::vector<Interval> gathers, computes, reduces, holds;
  std::vector<int64_t> compute_ends, backward_ends;  // ascending (one stream: ops never overlap)
};

bool isUnitOp(EventKind k) {
  return k == EventKind::AllGather || k == EventKind::Forward || k == EventKind::Backward ||
         k == EventKind::ReduceScatter || k == EventKind::AllReduce;
}

Interval spanOf(const Event& e) { return {e.begin_ns, std::max(e.end_ns, e.begin_ns + 1), e.kind == EventKind::Backward}; }

// The interval of a time-ordered list covering t, if any.
const Interval* covering(const std::vector<Interval>& list, int64_t t) {
  auto it = std::upper_bound(list.begin(), list.end(), t, [](int64_t v, const Interval& i) { return v < i.begin; });
  if (it == list.begin()) return nullptr;
  --it;
  return t < it->end ? &*it : nullptr;
}

// Index into steps of the step running at t, -1 between steps.
int stepIndexAt(const std::vector<StepSpan>& steps, int64_t t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t, [](int64_t v, const StepSpan& s) { return v < s.begin; });
  if (it == steps.begin()) return -1;
  --it;
  return t < it->end ? static_cast<int>(it - steps.begin()) : -1;
}

UnitState stateOf(const UnitOps& ops, const std::vector<StepSpan>& steps, int64_t t) {
  if (covering(ops.computes, t)) return UnitState::Computing;
  if (covering(ops.gathers, t)) return UnitState::Gathering;
  if (covering(ops.holds, t)) return UnitState::Gathered;
  if (covering(ops.reduces, t)) return UnitState::Reducing;
  const int step = stepIndexAt(steps, t);
  if (step < 0) return UnitState::Sharded;
  // The last hold that ended by now: freed in this step?
  auto hold = std::upper_bound(ops.holds.begin(), ops.holds.end(), t, [](int64_t v, const Interval& i) { return v < i.begin; });
  const Interval* freed = nullptr;
  for (auto it = hold; it != ops.holds.begin();) {
    --it;
    if (it->end <= t) {
      freed = &*it;
      break;
    }
  }
  if (!freed || stepIndexAt(steps, freed->end) != step) return UnitState::Sharded;
  // Gradients still to be reduced: a backward ended in this step and the
  // first reduce after it has not finished yet.
  auto bwd = std::upper_bound(ops.backward_ends.begin(), ops.backward_ends.end(), t);
  if (bwd != ops.backward_ends.begin() && stepIndexAt(steps, *(bwd - 1) - 1) == step) {
    const int64_t backward_end = *(bwd - 1);
    auto reduce = std::lower_bound(ops.reduces.begin(), ops.reduces.end(), backward_end,
                                   [](const Interval& i, int64_t v) { return i.begin < v; });
    if (reduce == ops.reduces.end() || reduce->end > t) return UnitState::Reducing;
  }
  return UnitState::Freed;
}

const std::vector<UnitSpan> kNoSpans;

}  // namespace

int UnitStates::unitId(int index) const {
  return index >= 0 && index < unitCount() ? m_ids[static_cast<size_t>(index)] : -1;
}

int UnitStates::indexOf(int unit_id) const {
  const auto it = std::lower_bound(m_ids.begin(), m_ids.end(), unit_id);
  return it != m_ids.end() && *it == unit_id ? static_cast<int>(it - m_ids.begin()) : -1;
}

void UnitStates::sync(const EventStore& store) {
  if (m_store == &store && m_generation == store.generation() && m_seen == store.eventCount()) return;
  m_store = &store;
  m_generation = store.generation();
  m_seen = store.eventCount();
  m_lastStep = -1;
  const int ranks = store.rankCount();

  // Units: the ids the metadata names and the events use, densely.
  std::set<int> ids;
  for (const UnitInfo& u : store.meta().units)
    if (u.index >= 0) ids.insert(u.index);
  m_source.resize(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) m_source[static_cast<size_t>(r)] = store.sourceOf(r);
  for (int r = 0; r < ranks; ++r) {
    if (store.isCopy(r)) continue;  // its source's events: the same ids
    int last = -1;
    for (const Event& e : store.events(r)) {
      if (e.unit < 0 || e.unit == last || !isUnitOp(e.kind)) continue;
      last = e.unit;
      ids.insert(e.unit);
    }
  }
  m_ids.assign(ids.begin(), ids.end());
  const size_t units = m_ids.size();

  m_spans.assign(static_cast<size_t>(ranks), {});
  m_holds.assign(static_cast<size_t>(ranks), {});
  for (int r = 0; r < ranks; ++r) {
    if (store.isCopy(r)) continue;  // reads its source's spans and holds
    const std::vector<Event>& events = store.events(r);
    std::map<int, StepSpan> step_map;
    std::map<int, UnitOps> by_unit;  // only the units this rank touches
    struct Ledger {
      int64_t t;
      int64_t bytes;
      size_t order;
    };
    std::vector<Ledger> allocs, frees;
    std::vector<std::pair<Interval, int>> gathers;  // with the unit index
    for (size_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      if ((e.kind == EventKind::StepBegin || e.kind == EventKind::StepEnd) && e.step >= 0) {
        StepSpan& s = step_map.try_emplace(e.step, StepSpan{kOpen, kOpen, e.step}).first->second;
        (e.kind == EventKind::StepBegin ? s.begin : s.end) = e.begin_ns;
        continue;
      }
      if ((e.kind == EventKind::Alloc || e.kind == EventKind::Free) && e.category == Category::Gathered) {
        (e.kind == EventKind::Alloc ? allocs : frees).push_back({e.begin_ns, e.bytes, i});
        continue;
      }
      if (e.unit < 0 || !isUnitOp(e.kind)) continue;
      const int index = indexOf(e.unit);
      UnitOps& ops = by_unit[index];
      const Interval span = spanOf(e);
      switch (e.kind) {
        case EventKind::AllGather:
          ops.gathers.push_back(span);
          gathers.emplace_back(span, index);
          break;
        case EventKind::Forward:
        case EventKind::Backward: ops.computes.push_back(span); break;
        default: ops.reduces.push_back(span); break;
      }
      m_lastStep = std::max(m_lastStep, static_cast<int>(e.step));
    }
    if (by_unit.empty() && allocs.empty()) continue;
    std::vector<StepSpan> steps;
    for (auto& [step, s] : step_map) {
      if (s.begin == kOpen) s.begin = s.end;  // a step whose begin was not recorded
      steps.push_back(s);
    }
    std::sort(steps.begin(), steps.end(), [](const StepSpan& a, const StepSpan& b) { return a.begin < b.begin; });
    const auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
    for (auto& [index, ops] : by_unit) {
      std::stable_sort(ops.gathers.begin(), ops.gathers.end(), by_begin);
      std::stable_sort(ops.computes.begin(), ops.computes.end(), by_begin);
      std::stable_sort(ops.reduces.begin(), ops.reduces.end(), by_begin);
      for (const Interval& c : ops.computes) {
        ops.compute_ends.push_back(c.end);
        if (c.backward) ops.backward_ends.push_back(c.end);
      }
      std::sort(ops.compute_ends.begin(), ops.compute_ends.end());
      std::sort(ops.backward_ends.begin(), ops.backward_ends.end());
    }

    // The ledger's gathered buffers, each given to its unit.
    const auto by_time = [](const Ledger& a, const Ledger& b) { return a.t != b.t ? a.t < b.t : a.order < b.order; };
    std::sort(allocs.begin(), allocs.end(), by_time);
    std::sort(frees.begin(), frees.end(), by_time);
    std::stable_sort(gathers.begin(), gathers.end(), [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
    std::vector<Hold>& holds = m_holds[static_cast<size_t>(r)];
    for (size_t k = 0; k < allocs.size(); ++k)
      holds.push_back({allocs[k].t, kOpen, allocs[k].bytes, k < gathers.size() ? gathers[k].second : -1});
    std::vector<size_t> open;  // holds allocated and not yet freed
    size_t next_alloc = 0;
    for (const Ledger& f : frees) {
      while (next_alloc < holds.size() && holds[next_alloc].begin <= f.t) open.push_back(next_alloc++);
      // The held buffer whose unit computed last before this free (since it
      // was gathered); else one of the same size; else the oldest.
      size_t best = open.size();
      int64_t best_compute = -1;
      bool best_size = false;
      for (size_t k = 0; k < open.size(); ++k) {
        const Hold& h = holds[open[k]];
        int64_t computed = -1;
        if (auto it = by_unit.find(h.unit); h.unit >= 0 && it != by_unit.end()) {
          const std::vector<int64_t>& ends = it->second.compute_ends;
          auto e = std::upper_bound(ends.begin(), ends.end(), f.t);
          if (e != ends.begin() && *(e - 1) > h.begin) computed = *(e - 1);
        }
        const bool size = h.bytes == f.bytes;
        if (best == open.size() || computed > best_compute || (computed == best_compute && size && !best_size)) {
          best = k;
          best_compute = computed;
          best_size = size;
        }
      }
      if (best == open.size()) continue;  // a free before any alloc: nothing to close
      holds[open[best]].end = f.t;
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(best));
    }
    for (const Hold& h : holds)
      if (h.unit >= 0) by_unit[h.unit].holds.push_back({h.begin, std::max(h.end, h.begin), false});

    // Spans: the state between every two consecutive moments anything changes.
    std::vector<std::vector<UnitSpan>>& rank_spans = m_spans[static_cast<size_t>(r)];
    rank_spans.assign(units, {});
    for (auto& [index, ops] : by_unit) {
      std::stable_sort(ops.holds.begin(), ops.holds.end(), by_begin);
      std::vector<int64_t> edges;
      for (const std::vector<Interval>* list : {&ops.gathers, &ops.computes, &ops.reduces, &ops.holds})
        for (const Interval& i : *list) {
          edges.push_back(i.begin);
          if (i.end != kOpen) edges.push_back(i.end);
        }
      if (edges.empty()) continue;
      const int64_t first = *std::min_element(edges.begin(), edges.end());
      for (const StepSpan& s : steps) {
        if (s.end != kOpen && s.end > first) edges.push_back(s.end);
        if (s.begin > first) edges.push_back(s.begin);
      }
      std::sort(edges.begin(), edges.end());
      edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
      edges.push_back(kOpen);
      std::vector<UnitSpan>& out = rank_spans[static_cast<size_t>(index)];
      for (size_t k = 0; k + 1 < edges.size(); ++k) {
        const int64_t a = edges[k], b = edges[k + 1];
        const UnitState s = stateOf(ops, steps, a);
        if (s == UnitState::Sharded) continue;
        const int si = stepIndexAt(steps, a);
        const int step = si >= 0 ? steps[static_cast<size_t>(si)].step : -1;
        if (!out.empty() && out.back().end_ns == a && out.back().state == s && out.back().step == step)
          out.back().end_ns = b;
        else
          out.push_back({a, b, s, step});
      }
    }
  }
}

UnitState UnitStates::stateAt(int rank, int unit, int64_t t) const {
  const std::vector<UnitSpan>& list = spans(rank, unit);
  auto it = std::upper_bound(list.begin(), list.end(), t, [](int64_t v, const UnitSpan& s) { return v < s.begin_ns; });
  if (it == list.begin()) return UnitState::Sharded;
  --it;
  return t < it->end_ns ? it->state : UnitState::Sharded;
}

const std::vector<UnitSpan>& UnitStates::spans(int rank, int unit) const {
  if (rank < 0 || rank >= rankCount() || unit < 0 || unit >= unitCount()) return kNoSpans;
  const auto& rank_spans = m_spans[sourceIndex(rank)];
  return static_cast<size_t>(unit) < rank_spans.size() ? rank_spans[static_cast<size_t>(unit)] : kNoSpans;
}

int64_t UnitStates::heldBytes(int rank, int unit, int64_t t) const {
  if (rank < 0 || rank >= rankCount() || unit < 0) return 0;
  int64_t bytes = 0;
  for (const Hold& h : m_holds[sourceIndex(rank)])
    if (h.unit == unit && h.begin <= t && t < h.end) bytes += h.bytes;
  return bytes;
}

int64_t UnitStates::unattributedBytes(int rank, int64_t t) const {
  if (rank < 0 || rank >= rankCount()) return 0;
  int64_t bytes = 0;
  for (const Hold& h : m_holds[sourceIndex(rank)])
    if (h.unit < 0 && h.begin <= t && t < h.end) bytes += h.bytes;
  return bytes;
}

std::pair<int64_t, int64_t> UnitStates::computeSpan(int unit, int step, bool forward) const {
  if (!m_store || m_store->rankCount() == 0 || unit < 0 || unit >= unitCount()) return {-1, -1};
  const int id = unitId(unit);
  for (const Event& e : m_store->events(0)) {
    if (e.unit != id || e.step != step) continue;
    if (e.kind == (forward ? EventKind::Forward : EventKind::Backward)) return {e.begin_ns, e.end_ns};
  }
  return {-1, -1};
}

}  // namespace shardscope

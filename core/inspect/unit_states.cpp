#include "inspect/unit_states.h"

#include <algorithm>
#include <limits>
#include <map>

#include "inspect/event_store.h"

namespace shardscope {

namespace {

enum class OpType : uint8_t { Gather, Forward, Backward, Reduce };

struct Op {
  int64_t begin = 0, end = 0;
  OpType type = OpType::Gather;
  int step = -1;
};

UnitState stateOf(OpType t) {
  switch (t) {
    case OpType::Gather: return UnitState::Gathering;
    case OpType::Forward:
    case OpType::Backward: return UnitState::Computing;
    case OpType::Reduce: return UnitState::Reducing;
  }
  return UnitState::Sharded;
}

// Between two ops of one unit in one step.
UnitState gapState(OpType a, OpType b) {
  switch (a) {
    case OpType::Gather: return UnitState::Gathered;
    case OpType::Forward:
    case OpType::Backward:
      if (b == OpType::Gather) return UnitState::Freed;       // dropped, gathered again later
      if (b == OpType::Reduce) return UnitState::Reducing;    // gradients queued for the reduce
      return UnitState::Gathered;                             // more compute on the same copy
    case OpType::Reduce: return b == OpType::Reduce ? UnitState::Reducing : UnitState::Freed;
  }
  return UnitState::Sharded;
}

// After a unit's last op of a step, until the step ends.
UnitState trailingState(OpType a) {
  switch (a) {
    case OpType::Gather: return UnitState::Gathered;
    case OpType::Backward: return UnitState::Reducing;
    default: return UnitState::Freed;
  }
}

const std::vector<UnitSpan> kNoSpans;

}  // namespace

void UnitStates::sync(const EventStore& store) {
  if (m_store == &store && m_generation == store.generation() && m_seen == store.eventCount()) return;
  m_store = &store;
  m_generation = store.generation();
  m_seen = store.eventCount();
  m_units = static_cast<int>(store.meta().units.size());
  for (const UnitInfo& u : store.meta().units) m_units = std::max(m_units, u.index + 1);
  m_lastStep = -1;
  const int ranks = store.rankCount();
  m_spans.assign(static_cast<size_t>(ranks), {});
  std::vector<std::vector<Op>> ops;
  for (int r = 0; r < ranks; ++r) {
    ops.assign(static_cast<size_t>(m_units), {});
    std::map<int, int64_t> step_end;
    for (const Event& e : store.events(r)) {
      if (e.kind == EventKind::StepEnd && e.step >= 0) step_end[e.step] = e.end_ns;
      if (e.unit < 0) continue;
      OpType type;
      switch (e.kind) {
        case EventKind::AllGather: type = OpType::Gather; break;
        case EventKind::Forward: type = OpType::Forward; break;
        case EventKind::Backward: type = OpType::Backward; break;
        case EventKind::ReduceScatter:
        case EventKind::AllReduce: type = OpType::Reduce; break;
        default: continue;
      }
      if (e.unit >= m_units) {
        m_units = e.unit + 1;
        ops.resize(static_cast<size_t>(m_units));
      }
      ops[static_cast<size_t>(e.unit)].push_back({e.begin_ns, e.end_ns, type, e.step});
      m_lastStep = std::max(m_lastStep, static_cast<int>(e.step));
    }
    auto& rank_spans = m_spans[static_cast<size_t>(r)];
    rank_spans.assign(static_cast<size_t>(m_units), {});
    for (int u = 0; u < m_units; ++u) {
      std::vector<Op>& list = ops[static_cast<size_t>(u)];
      std::stable_sort(list.begin(), list.end(), [](const Op& a, const Op& b) { return a.begin < b.begin; });
      std::vector<UnitSpan>& out = rank_spans[static_cast<size_t>(u)];
      const auto push = [&](int64_t b, int64_t e, UnitState s, int step) {
        if (e <= b) return;
        if (!out.empty() && out.back().end_ns > b) b = out.back().end_ns;  // never overlap
        if (e <= b) return;
        out.push_back({b, e, s, step});
      };
      for (size_t i = 0; i < list.size(); ++i) {
        const Op& a = list[i];
        const Op* b = i + 1 < list.size() ? &list[i + 1] : nullptr;
        const int64_t a_end = b && b->begin < a.end ? b->begin : a.end;
        // Instants of zero length (a stopped run's last collective) still show.
        push(a.begin, std::max(a_end, a.begin + 1), stateOf(a.type), a.step);
        if (b && b->step == a.step) {
          push(a_end, b->begin, gapState(a.type, b->type), a.step);
          continue;
        }
        const auto end = step_end.find(a.step);
        const int64_t until = end != step_end.end() ? end->second
                              : b                  ? b->begin
                                                   : std::numeric_limits<int64_t>::max();
        push(a_end, until, trailingState(a.type), a.step);
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
  if (rank < 0 || rank >= rankCount() || unit < 0 || unit >= m_units) return kNoSpans;
  return m_spans[static_cast<size_t>(rank)][static_cast<size_t>(unit)];
}

std::pair<int64_t, int64_t> UnitStates::computeSpan(int unit, int step, bool forward) const {
  if (!m_store || m_store->rankCount() == 0) return {-1, -1};
  for (const Event& e : m_store->events(0)) {
    if (e.unit != unit || e.step != step) continue;
    if (e.kind == (forward ? EventKind::Forward : EventKind::Backward)) return {e.begin_ns, e.end_ns};
  }
  return {-1, -1};
}

}  // namespace shardscope

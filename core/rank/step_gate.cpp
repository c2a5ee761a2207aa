#include "rank/step_gate.h"

#include <algorithm>
#include <climits>

#include "common/log.h"

namespace shardscope {

std::set<EventKind> breakEventKinds(const std::vector<BreakOp>& ops) {
  std::set<EventKind> kinds;
  for (BreakOp op : ops) {
    switch (op) {
      case BreakOp::Forward: kinds.insert(EventKind::Forward); break;
      case BreakOp::Backward: kinds.insert(EventKind::Backward); break;
      case BreakOp::OptimizerStep: kinds.insert(EventKind::OptimizerStep); break;
      case BreakOp::Free: kinds.insert(EventKind::Free); break;
      case BreakOp::AllGather: kinds.insert(EventKind::AllGather); break;
      case BreakOp::ReduceScatter: kinds.insert(EventKind::ReduceScatter); break;
    }
  }
  return kinds;
}

bool isComputeGate(EventKind k) {
  return k == EventKind::Forward || k == EventKind::Backward || k == EventKind::OptimizerStep;
}

namespace {

int phaseOf(EventKind k) { return k == EventKind::Forward ? 0 : k == EventKind::Backward ? 1 : 2; }

}  // namespace

StepGate::StepGate(int ranks, RunControl& control)
    : m_ranks(ranks), m_participants(ranks), m_control(control), m_last(ranks), m_at(ranks), m_lastNs(ranks, 0),
      m_waiting(ranks, false),
      m_passes(ranks, 0) {
  for (int r = 0; r < ranks; ++r) m_representative.push_back(r);
}

void StepGate::setRepresentatives(std::vector<int> representative) {
  std::lock_guard lock(m_mutex);
  m_representative = std::move(representative);
  m_participants = 0;
  for (int r = 0; r < m_ranks; ++r) m_participants += m_representative[static_cast<size_t>(r)] == r ? 1 : 0;
}

bool StepGate::isStop(int rank, const GatePoint& p) const {
  if (p.slot >= 0) return m_mode != StepMode::Run && p.slot >= m_targetSlot;
  const bool compute = isComputeGate(p.kind);
  const bool breakpoint = m_breakKinds.count(p.kind) || (compute && m_breakUnits.count(p.unit >= 0 ? p.unit : p.block));
  if (m_mode == StepMode::NextAction) return true;  // every pass after a release
  if (!compute) return m_mode != StepMode::Pause && breakpoint;
  const GatePoint& last = m_last[rank];
  switch (m_mode) {
    case StepMode::Run: return breakpoint;
    case StepMode::Pause: return m_passes[rank] >= m_pauseAt;
    case StepMode::NextOp: return true;  // every compute pass after a release is the next op
    case StepMode::NextUnit: {
      const int a = last.unit >= 0 ? last.unit : last.block, b = p.unit >= 0 ? p.unit : p.block;
      return breakpoint || a != b || phaseOf(last.kind) != phaseOf(p.kind) || last.step != p.step;
    }
    case StepMode::NextPhase:
      return breakpoint || phaseOf(last.kind) != phaseOf(p.kind) || last.step != p.step;
    case StepMode::NextStep: return breakpoint || last.step != p.step;
    case StepMode::NextAction: return true;
  }
  return false;
}

void StepGate::pass(int rank, const GatePoint& point, int64_t now_ns, const std::function<void()>& settle) {
  if (!m_enabled) return;
  if (m_remote) {
    // Whether this is a stop is the launcher's call: what the views read must be complete first.
    if (settle) settle();
    m_remote->pass(rank, point, now_ns, m_control);
    return;
  }
  std::unique_lock lock(m_mutex);
  const bool compute = isComputeGate(point.kind);
  if (compute) ++m_passes[rank];  // Pause counts compute points, so it stops where it always did
  const bool stop = isStop(rank, point);
  // Unit, phase and step changes are judged between compute points.
  if (compute) m_last[rank] = point;
  m_at[rank] = point;
  m_lastNs[rank] = now_ns;
  if (!stop) return;
  if (settle) {
    const uint64_t seen = m_generation;
    lock.unlock();
    settle();
    lock.lock();
    if (m_generation != seen) return;  // released (resumed) while settling: no longer a stop
  }
  // A pipeline's stage whose pass lies beyond the released slots stays
  // stopped, counted at the next stop.
  do {
    m_waiting[rank] = true;
    if (++m_waitingCount == m_participants) {
      ++m_stops;
      SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Engine), "stop {}: ranks stopped at step {}, {} of block {}{}", m_stops,
                          point.step, eventKindName(point.kind), point.block,
                          point.unit >= 0 ? " (unit " + std::to_string(point.unit) + ")" : std::string());
    }
    m_cv.notify_all();
    const uint64_t generation = m_generation;
    // The release (step/resume) clears the waiting set itself, so a rank that has
    // not woken yet is never counted at the next stop.
    m_control.waitUntil(lock, m_cv, [&] { return m_generation != generation; });
  } while (point.slot >= 0 && isStop(rank, point));
}

bool StepGate::passIfFree(int rank, const GatePoint& point, int64_t now_ns) {
  if (!m_enabled) return true;
  std::lock_guard lock(m_mutex);
  const bool compute = isComputeGate(point.kind);
  if (compute) ++m_passes[rank];
  if (isStop(rank, point)) {
    if (compute) --m_passes[rank];  // pass() counts it again
    return false;
  }
  if (compute) m_last[rank] = point;
  m_at[rank] = point;
  m_lastNs[rank] = now_ns;
  return true;
}

void StepGate::pause() {
  std::lock_guard lock(m_mutex);
  if (m_slotsPerStep > 0) m_targetSlot = slotTarget(StepMode::Pause);
  m_mode = StepMode::Pause;
  m_pauseAt = *std::max_element(m_passes.begin(), m_passes.end()) + 1;
}

int64_t StepGate::slotTarget(StepMode granularity) const {
  // Where the stages are: the earliest slot a stopped stage waits at, or,
  // while they run, the slot after the furthest one passed.
  int64_t furthest = -1, earliest_waiting = INT64_MAX;
  bool all_waiting = m_waitingCount == m_participants;
  for (int r = 0; r < m_ranks; ++r) {
    if (m_representative[static_cast<size_t>(r)] != r) continue;
    const int64_t slot = m_at[static_cast<size_t>(r)].slot;
    furthest = std::max(furthest, slot);
    if (m_waiting[static_cast<size_t>(r)] && slot >= 0) earliest_waiting = std::min(earliest_waiting, slot);
  }
  const int64_t now = all_waiting && earliest_waiting != INT64_MAX ? earliest_waiting : furthest + 1;
  const int64_t per = m_slotsPerStep;
  switch (granularity) {
    case StepMode::Run:
    case StepMode::Pause: return furthest + 1;
    case StepMode::NextPhase: {  // the flush of the step `now` is in, or of the next once there
      int64_t flush = (now / per) * per + per - 1;
      if (flush <= now && all_waiting) flush += per;
      return flush;
    }
    case StepMode::NextStep: return (now / per + 1) * per;
    case StepMode::NextOp:
    case StepMode::NextUnit:
    case StepMode::NextAction: return all_waiting ? now + 1 : now;
  }
  return now + 1;
}

void StepGate::resume() { step(StepMode::Run); }

void StepGate::step(StepMode granularity) {
  static constexpr const char* kModes[] = {"run", "pause", "next op", "next unit", "next phase", "next step", "next action"};
  SPDLOG_LOGGER_DEBUG(&logger(LogComponent::Engine), "gate released: {}", kModes[static_cast<int>(granularity)]);
  {
    std::lock_guard lock(m_mutex);
    if (m_slotsPerStep > 0) m_targetSlot = slotTarget(granularity);
    m_mode = granularity;
    ++m_generation;
    m_waitingCount = 0;
    std::fill(m_waiting.begin(), m_waiting.end(), false);
  }
  m_cv.notify_all();
}

void StepGate::setBreakpoints(std::set<EventKind> kinds, std::set<int> units_or_blocks) {
  std::lock_guard lock(m_mutex);
  m_breakKinds = std::move(kinds);
  m_breakUnits = std::move(units_or_blocks);
}

bool StepGate::stopped(std::vector<GatePoint>* points, uint64_t* stop_id, std::vector<int64_t>* times_ns) const {
  std::lock_guard lock(m_mutex);
  if (m_waitingCount != m_participants) return false;
  if (points) {
    points->resize(static_cast<size_t>(m_ranks));
    for (int r = 0; r < m_ranks; ++r) (*points)[static_cast<size_t>(r)] = m_at[static_cast<size_t>(m_representative[static_cast<size_t>(r)])];
  }
  if (stop_id) *stop_id = m_stops;
  if (times_ns) {
    times_ns->resize(static_cast<size_t>(m_ranks));
    for (int r = 0; r < m_ranks; ++r)
      (*times_ns)[static_cast<size_t>(r)] = m_lastNs[static_cast<size_t>(m_representative[static_cast<size_t>(r)])];
  }
  return true;
}

bool StepGate::paused() const {
  std::lock_guard lock(m_mutex);
  return m_mode != StepMode::Run;
}

}  // namespace shardscope

#include "attach/remote_gate.h"

namespace shardscope {

void RemoteGate::step(StepMode granularity) {
  StepCommand c{StepCommandOp::Step};
  c.mode = granularity;
  push(std::move(c));
}

void RemoteGate::setBreakpoints(std::set<EventKind> kinds, std::set<int> units_or_blocks) {
  StepCommand c{StepCommandOp::Breakpoints};
  c.kinds.assign(kinds.begin(), kinds.end());
  c.units.assign(units_or_blocks.begin(), units_or_blocks.end());
  push(std::move(c));
}

bool RemoteGate::stopped(std::vector<GatePoint>* points, uint64_t* stop_id, std::vector<int64_t>* times_ns) const {
  std::lock_guard lock(m_mutex);
  if (!m_state.stopped) return false;
  if (points) *points = m_state.points;
  if (stop_id) *stop_id = m_state.stop_id;
  if (times_ns) *times_ns = m_state.times_ns;
  return true;
}

bool RemoteGate::paused() const {
  std::lock_guard lock(m_mutex);
  return m_state.paused;
}

std::optional<std::array<int64_t, kCategoryCount>> RemoteGate::ledgerAtStop(int rank) const {
  std::lock_guard lock(m_mutex);
  if (!m_state.stopped || rank < 0 || static_cast<size_t>(rank) >= m_state.ledgers.size()) return std::nullopt;
  return m_state.ledgers[static_cast<size_t>(rank)];
}

std::vector<std::string> RemoteGate::takeNotices() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_notices, {});
}

std::vector<StepCommand> RemoteGate::takeCommands() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_commands, {});
}

void RemoteGate::update(GateStateMessage state) {
  std::lock_guard lock(m_mutex);
  m_state = std::move(state);
}

void RemoteGate::notice(std::string text) {
  std::lock_guard lock(m_mutex);
  m_notices.push_back(std::move(text));
}

void RemoteGate::push(StepCommand command) {
  std::lock_guard lock(m_mutex);
  // A released stop is no stop until the run says where it stops next.
  if (command.op == StepCommandOp::Step || command.op == StepCommandOp::Resume) m_state.stopped = false;
  if (command.op == StepCommandOp::Pause) m_state.paused = true;
  if (command.op == StepCommandOp::Resume) m_state.paused = false;
  m_commands.push_back(std::move(command));
}

}  // namespace shardscope

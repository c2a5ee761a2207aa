// The StepControl of an attached run: commands go to the served run (the
// attach session sends them), and stopped()/paused() answer from the last
// gate state it reported, with each rank's ledger at the stop.
#pragma once

#include <array>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launch/wire_format.h"
#include "rank/step_control.h"

namespace shardscope {

class RemoteGate final : public StepControl {
 public:
  void pause() override { push({StepCommandOp::Pause}); }
  void resume() override { push({StepCommandOp::Resume}); }
  void step(StepMode granularity) override;
  void setBreakpoints(std::set<EventKind> kinds, std::set<int> units_or_blocks) override;
  bool stopped(std::vector<GatePoint>* points = nullptr, uint64_t* stop_id = nullptr,
               std::vector<int64_t>* times_ns = nullptr) const override;
  bool paused() const override;
  // Stops the served run (not just this inspector: detaching is cancelling the attached Run).
  void stopRun() { push({StepCommandOp::Stop}); }
  // Rank r's bytes by category at the current stop (nullopt when not stopped).
  std::optional<std::array<int64_t, kCategoryCount>> ledgerAtStop(int rank) const;
  // Lines the served run sent (a refused command), oldest first; taken once.
  std::vector<std::string> takeNotices();

  // The session's side.
  std::vector<StepCommand> takeCommands();
  void update(GateStateMessage state);
  void notice(std::string text);

 private:
  void push(StepCommand command);
  mutable std::mutex m_mutex;
  std::vector<StepCommand> m_commands;
  GateStateMessage m_state;
  std::vector<std::string> m_notices;
};

}  // namespace shardscope

// Lockstep stepping through a run. Every rank's compute stream passes the gate
// before each forward, backward and optimizer op, before it frees a unit's
// gathered parameters (FSDP) and before each collective launch whose stream
// waits for the compute stream there (an all-gather without prefetch, a unit's
// reduce-scatter, ZeRO's all-gather of the updated parameters). While the gate
// is paused the ranks stop there, and a controller (GUI, CLI, test) releases
// them to the next action, op, unit, phase or training step, or runs on to a
// breakpoint. All ranks run the same sequence of gate points, so they stop at
// the same logical point: the state a view shows at a stop is the state there
// on every rank. Only the compute stream is gated, so a stop never holds a
// collective half-entered; a gate costs nothing when stepping is off.
//
// A pipeline's stages run different sequences, so its points carry their
// slot in the schedule's unit-time order (GatePoint::slot) and a stop is a
// slot T: every stage stops before its first pass at a slot >= T. Each pass's
// inputs come from smaller slots, so no stopped stage holds up one still
// running to T. The next op, unit or action is the next slot; the next phase
// the step's flush; the next step the first slot of the next; pause the slot
// after the furthest stage's. Breakpoints do not stop a pipeline (its stages
// never reach one op together).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <vector>

#include "common/run_control.h"
#include "config/kinds.h"
#include "rank/step_control.h"
#include "trace/event.h"

namespace shardscope {

// The event kinds --break-on names.
std::set<EventKind> breakEventKinds(const std::vector<BreakOp>& ops);

// Forward, backward and the optimizer step: the ops that stop by op, unit,
// phase and step; the other gate points (a free, a launch) stop by action.
bool isComputeGate(EventKind kind);

// A worker process's rank (--launch processes): the run's one gate is the
// launcher's, and each gate point is passed there (launch/gate_relay.h).
// pass() returns when the launcher lets the rank go on; it throws RunAborted
// when `control` aborts first, RunError when the launcher is gone.
class RemoteGatePass {
 public:
  virtual ~RemoteGatePass() = default;
  virtual void pass(int rank, const GatePoint& point, int64_t now_ns, const RunControl& control) = 0;
};

class StepGate final : public StepControl {
 public:
  StepGate(int ranks, RunControl& control);

  // Compute stream of `rank`: blocks while this point is a stop. now_ns: the
  // rank's run-clock time there (modeled or measured), kept for the views.
  // settle: run (unlocked) before the rank counts as stopped, so what the
  // views read at a stop is complete (a GPU rank resolves its device spans).
  void pass(int rank, const GatePoint& point, int64_t now_ns = 0, const std::function<void()>& settle = {});
  // pass() when the point is no stop (true); when it is one, nothing happens
  // and it returns false: the caller then calls pass(), which may block.
  // For a relay that must not block on the points that run freely.
  bool passIfFree(int rank, const GatePoint& point, int64_t now_ns = 0);

  // Controller side (any thread).
  // Stop every rank at the same gate point: the one after the furthest
  // rank's last, which the ranks behind run on to (ranks running freely are
  // not in lockstep, but they all pass the same sequence of points).
  void pause() override;
  void resume() override;                // run freely (breakpoints still stop)
  void step(StepMode granularity) override;  // NextAction / NextOp / NextUnit / NextPhase / NextStep, then stop
  // kinds: any gate point of these kinds; units_or_blocks: compute ops of them.
  void setBreakpoints(std::set<EventKind> kinds, std::set<int> units_or_blocks) override;
  // True when every rank is stopped at a gate; `points` gets where (per rank),
  // `stop_id` which stop it is (counts up by one per all-ranks stop) and
  // `times_ns` each rank's clock there.
  bool stopped(std::vector<GatePoint>* points = nullptr, uint64_t* stop_id = nullptr,
               std::vector<int64_t>* times_ns = nullptr) const override;
  bool paused() const override;  // the controller asked for a stop that has not been released
  // Symmetric replication: rank r is a copy of representative[r] and never
  // passes the gate itself; a stop then needs only the representatives, and
  // stopped() reports each copy at its representative's point.
  void setRepresentatives(std::vector<int> representative);
  bool enabled() const { return m_enabled; }
  void enable() { m_enabled = true; }  // before the run starts; a disabled gate costs nothing
  // Before the run starts (a worker process): an enabled gate hands every
  // point to `remote` instead of stopping here; the controller side is unused.
  void setRemote(RemoteGatePass* remote) { m_remote = remote; }
  // Before the run starts (a pipeline): the slots of one step, flush included
  // (PipelineScheduleOrder::slotsPerStep), for the next phase and step.
  void setSlotsPerStep(int64_t per_step) { m_slotsPerStep = per_step; }

 private:
  bool isStop(int rank, const GatePoint& p) const;
  // A pipeline's stop slot for a release of this granularity, from where the
  // stages are now (under the lock).
  int64_t slotTarget(StepMode granularity) const;

  const int m_ranks;
  int m_participants;                // ranks that pass the gate themselves
  std::vector<int> m_representative;
  RunControl& m_control;
  bool m_enabled = false;
  RemoteGatePass* m_remote = nullptr;
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  StepMode m_mode = StepMode::Run;
  uint64_t m_generation = 0;
  std::vector<GatePoint> m_last;  // the compute point each rank last stopped at or passed
  std::vector<GatePoint> m_at;    // the gate point each rank last stopped at or passed (any kind)
  std::vector<int64_t> m_lastNs;  // and its clock there
  std::vector<bool> m_waiting;
  std::vector<uint64_t> m_passes;  // gate points each rank has reached
  uint64_t m_pauseAt = 0;          // Pause mode: the pass number every rank stops at
  int m_waitingCount = 0;
  uint64_t m_stops = 0;
  std::set<EventKind> m_breakKinds;
  std::set<int> m_breakUnits;
  int64_t m_slotsPerStep = 0;  // a pipeline's; 0: lockstep points only
  int64_t m_targetSlot = 0;    // a pipeline's stop: every stage before its first pass at or after this slot
};

}  // namespace shardscope

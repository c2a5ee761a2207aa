// What a controller (the GUI, the CLI's breakpoints, an attached inspector)
// asks of a run's lockstep stepping: the StepGate of a run in this process,
// or a remote run's gate reached over the network (attach/remote_gate.h).
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "trace/event.h"

namespace shardscope {

struct GatePoint {
  // Forward, Backward or OptimizerStep; Free (of a unit's gathered
  // parameters); AllGather or ReduceScatter (a launch).
  EventKind kind = EventKind::Forward;
  int step = -1;
  int block = -1;  // model segment
  int unit = -1;   // FSDP unit, -1 otherwise
  // Pipelines: the microbatch whose pass this is (-1: the step's flush), and
  // the pass's place in the schedule's unit-time order over the whole run
  // (step · slotsPerStep + PipelineScheduleOrder::slot); -1 without a pipeline.
  int microbatch = -1;
  int64_t slot = -1;
  bool operator==(const GatePoint&) const = default;
};

// NextAction: every gate point; NextOp: the next compute op; NextUnit, NextPhase
// and NextStep: the first compute op of the next unit, phase or training step.
enum class StepMode { Run, Pause, NextOp, NextUnit, NextPhase, NextStep, NextAction };

class StepControl {
 public:
  virtual ~StepControl() = default;
  // Stop every rank at the same gate point (the one after the furthest rank's last).
  virtual void pause() = 0;
  virtual void resume() = 0;                   // run freely (breakpoints still stop)
  virtual void step(StepMode granularity) = 0;  // release to the next stop of this granularity
  // kinds: any gate point of these kinds; units_or_blocks: compute ops of them.
  virtual void setBreakpoints(std::set<EventKind> kinds, std::set<int> units_or_blocks) = 0;
  // True when every rank is stopped at a gate; `points` gets where (per rank),
  // `stop_id` which stop it is (counts up by one per all-ranks stop) and
  // `times_ns` each rank's clock there.
  virtual bool stopped(std::vector<GatePoint>* points = nullptr, uint64_t* stop_id = nullptr,
                       std::vector<int64_t>* times_ns = nullptr) const = 0;
  virtual bool paused() const = 0;  // a stop was asked for and not released
};

}  // namespace shardscope

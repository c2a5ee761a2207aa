// The order in which each pipeline stage runs its microbatches' forward and
// backward passes: GPipe, 1F1B (PipeDream-Flush) and Megatron-LM's
// interleaved 1F1B over V model chunks per stage. One object the engine, the
// views and the walkthrough all read. Chunk c of the S·V model chunks runs on
// stage c mod S; a stage's forward of chunk c needs chunk c − 1's output for
// the same microbatch, its backward needs chunk c + 1's input gradient.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/kinds.h"

namespace shardscope {

// Where a pass sits in its stage's order: 1F1B's warm-up forwards before the
// first backward, its steady state of one forward then one backward, its
// cool-down backwards after the last forward. GPipe's forwards are all
// warm-up and its backwards all cool-down.
enum class PipelinePhase { WarmUp, Steady, CoolDown };

struct PipelineAction {
  enum class Pass { Forward, Backward };
  Pass pass = Pass::Forward;
  int microbatch = 0;
  int chunk = 0;  // global model chunk, 0 .. S·V − 1 (stage = chunk mod S)
  bool operator==(const PipelineAction&) const = default;
};

class PipelineScheduleOrder {
 public:
  // Throws ConfigError when the shape cannot be scheduled (interleaved needs
  // M a multiple of S and V >= 2).
  PipelineScheduleOrder(PipelineSchedule kind, int stages, int microbatches, int virtual_stages = 1);

  PipelineSchedule kind() const { return m_kind; }
  int stages() const { return m_stages; }
  int microbatches() const { return m_microbatches; }
  int virtualStages() const { return m_virtual; }
  int chunks() const { return m_stages * m_virtual; }
  int stageOf(int chunk) const { return chunk % m_stages; }
  // Stage s's passes, in the order it runs them.
  const std::vector<PipelineAction>& actions(int stage) const { return m_actions.at(static_cast<size_t>(stage)); }
  // Most microbatch-chunks whose forward has run and backward not yet on
  // stage s: what its activation memory holds at its peak (1F1B: S − s;
  // GPipe: M; interleaved: Megatron's warm-up + 1, in chunks).
  int maxInFlight(int stage) const;
  // The formula's bubble: the share of a step a stage idles with equal
  // forward and backward costs on every stage, (S − 1)/(V·M + S − 1).
  double bubbleFormula() const;
  // Runs the passes with unit costs (forward f, backward b per chunk) and no
  // transfer time: each stage's idle share of the makespan. Proves the order
  // is free of deadlock (throws std::logic_error naming the stuck stages otherwise).
  double simulatedBubble(double forward = 1.0, double backward = 2.0) const;

  // Where each pass sits in the step's unit-time order (forward 1, backward 2
  // per chunk): stage s's i-th action starts at slot(s, i). Every pass's
  // inputs come from passes at smaller slots, so stopping every stage before
  // its first pass at slot >= T leaves none waiting on another: the gate's
  // stops of a pipeline (rank/step_gate.h). slotsPerStep() is the makespan
  // plus one: the slot of the step's flush (gradient reduction, optimizer).
  // Stage s's warm-up forwards (1F1B: min(S − s − 1, M); interleaved:
  // Megatron-LM's (S − s − 1)·2 + (V − 1)·S, capped at V·M; GPipe: M) and
  // cool-down backwards (as many), read from its order.
  int warmUpForwards(int stage) const;
  int coolDownBackwards(int stage) const;
  PipelinePhase phaseOf(int stage, size_t action) const;
  // The index of `a` in stage s's order; -1 when the stage does not run it.
  int actionIndex(int stage, const PipelineAction& a) const;

  int64_t slot(int stage, size_t action) const { return m_slots.at(static_cast<size_t>(stage)).at(action); }
  int64_t slotsPerStep() const { return m_slotsPerStep; }

 private:
  struct Simulation {
    std::vector<std::vector<double>> starts;  // [stage][action]
    std::vector<double> free_at, busy;        // per stage
    double makespan = 0;
  };
  Simulation simulate(double forward, double backward) const;
  void computeSlots();

  PipelineSchedule m_kind;
  int m_stages, m_microbatches, m_virtual;
  std::vector<std::vector<PipelineAction>> m_actions;
  std::vector<std::vector<int64_t>> m_slots;
  int64_t m_slotsPerStep = 0;
};

// "F3" / "B3", with the chunk for interleaved schedules ("F3.1").
std::string actionText(const PipelineAction& a, bool with_chunk);

}  // namespace shardscope
